typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((row) => reduce_seq(add, 0.0) << map_seq(mult) << zip(row, v)) << a
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict v,
    global float* restrict out,
    global float* restrict tmp,
    int M,
    int N) {
  {  // map_glb((row) => reduce_seq(add, 0.0) << map_seq(mult) << zip(row, v)): one iteration per work-item
    int gl = get_global_id(0);
    for (int i = 0; i < N; i++) {  // map_seq(mult)
      tmp[N*gl + i] = mult(a[N*gl + i], v[i]);  // mult
    }
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i_1 = 0; i_1 < N; i_1++) {  // reduce_seq(add)
      acc = add(acc, tmp[N*gl + i_1]);  // add
    }
    out[gl] = acc;  // reduction result
  }
}
