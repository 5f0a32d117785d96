typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((b) => map_glb((n) => map_glb((k) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...
kernel void tbmm(const global float* restrict X,
    const global float* restrict Y,
    global float* restrict out,
    int B,
    int N,
    int M,
    int K) {
  {  // map_glb((b) => map_glb((n) => map_glb((k) => reduce_seq((acc, a) =>...: one iteration per work-item
    int gl = get_global_id(2);
    {  // map_glb((n) => map_glb((k) => reduce_seq((acc, a) => add(acc, mult(...: one iteration per work-item
      int gl_1 = get_global_id(1);
      {  // map_glb((k) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...: one iteration per work-item
        int gl_2 = get_global_id(0);
        float acc;  // acc for Float
        acc = 0.0f;  // initial value
        for (int i = 0; i < M; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
          acc = add(acc, mult(X[M*N*gl + M*gl_1 + i], Y[K*M*gl + M*gl_2 + i]));  // add
        }
        out[K*N*gl + K*gl_1 + gl_2] = acc;  // reduction result
      }
    }
  }
}
