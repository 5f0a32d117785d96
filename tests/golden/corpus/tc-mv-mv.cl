typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((i) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) << zip(i, x)...
kernel void mv(const global float* restrict A,
    const global float* restrict x,
    global float* restrict out,
    int M,
    int K) {
  {  // map_glb((i) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...: one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < K; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
      acc = add(acc, mult(A[K*gl + i], x[i]));  // add
    }
    out[gl] = acc;  // reduction result
  }
}
