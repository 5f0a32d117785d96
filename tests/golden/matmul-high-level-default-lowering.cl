typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((r) => map_glb((c) => reduce_seq(add, 0.0) << map_seq(mult) << zip(r, c)) << bt, dim=1) << a
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict bt,
    global float* restrict out,
    global float* restrict tmp,
    int M,
    int K,
    int N) {
  {  // map_glb((r) => map_glb((c) => reduce_seq(add, 0.0) << map_seq(mult)...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((c) => reduce_seq(add, 0.0) << map_seq(mult) << zip(r, c)): one iteration per work-item
      int gl_1 = get_global_id(0);
      for (int i = 0; i < K; i++) {  // map_seq(mult)
        tmp[K*N*gl + K*gl_1 + i] = mult(a[K*gl + i], bt[K*gl_1 + i]);  // mult
      }
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i_1 = 0; i_1 < K; i_1++) {  // reduce_seq(add)
        acc = add(acc, tmp[K*N*gl + K*gl_1 + i_1]);  // add
      }
      out[N*gl + gl_1] = acc;  // reduction result
    }
  }
}
