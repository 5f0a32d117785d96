typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((i) => map_glb((j) => add(mult(b, get(1) << j), reduce_seq((acc, a) => add(acc, mult(mult...
kernel void sgemm(const global float* restrict a,
    const global float* restrict b,
    const global float* restrict A,
    const global float* restrict B,
    const global float* restrict C,
    global float* restrict out,
    int N,
    int M,
    int K) {
  {  // map_glb((i) => map_glb((j) => add(mult(b, get(1) << j), reduce_seq(...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((j) => add(mult(b, get(1) << j), reduce_seq((acc, a) => add...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < M; i++) {  // reduce_seq((acc, a) => add(acc, mult(mult(a2, get(0) << a), get(1) ...
        acc = add(acc, mult(mult(a[0], A[M*gl + i]), B[K*i + gl_1]));  // add
      }
      out[K*gl + gl_1] = add(mult(b[0], C[K*gl + gl_1]), acc);  // add
    }
  }
}
