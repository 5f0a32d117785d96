typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((ab) => map_glb((r) => map_glb((c) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, g...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict b,
    global float* restrict out,
    int B,
    int N,
    int M,
    int K) {
  {  // map_glb((ab) => map_glb((r) => map_glb((c) => reduce_seq((acc, a) =...: one iteration per work-item
    int gl = get_global_id(2);
    {  // map_glb((r) => map_glb((c) => reduce_seq((acc, a) => add(acc, mult(...: one iteration per work-item
      int gl_1 = get_global_id(1);
      {  // map_glb((c) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...: one iteration per work-item
        int gl_2 = get_global_id(0);
        float acc;  // acc for Float
        acc = 0.0f;  // initial value
        for (int i = 0; i < M; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
          acc = add(acc, mult(a[M*N*gl + M*gl_1 + i], b[K*M*gl + M*gl_2 + i]));  // add
        }
        out[K*N*gl + K*gl_1 + gl_2] = acc;  // reduction result
      }
    }
  }
}
