typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// (k0) => map_glb(mult) << k0
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict y,
    global float* restrict tmp,
    int N) {
  {  // map_glb(mult): one iteration per work-item
    int gl = get_global_id(0);
    tmp[gl] = mult(x[gl], y[gl]);  // mult
  }
}

// (k0) => reduce_seq(add, 0.0) << k0
kernel void lift_kernel_1(global float* restrict out,
    global float* restrict tmp,
    int N) {
  float acc;  // acc for Float
  acc = 0.0f;  // initial value
  for (int i = 0; i < N; i++) {  // reduce_seq(add)
    acc = add(acc, tmp[i]);  // add
  }
  out[0] = acc;  // reduction result
}
