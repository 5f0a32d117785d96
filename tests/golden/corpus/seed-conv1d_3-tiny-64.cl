typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((win) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) << zip(win...
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict w,
    global float* restrict out,
    int N) {
  {  // map_glb((win) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ...: one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    #pragma unroll
    for (int i = 0; i < 3; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
      acc = add(acc, mult(x[gl + i], w[i]));  // add
    }
    out[gl] = acc;  // reduction result
  }
}
