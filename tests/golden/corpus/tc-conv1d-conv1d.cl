typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((i) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) << zip(i, K)...
kernel void conv1d(const global float* restrict I,
    const global float* restrict K,
    global float* restrict out,
    int M,
    int N) {
  {  // map_glb((i) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...: one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < N; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
      acc = add(acc, mult(I[gl + i], K[i]));  // add
    }
    out[gl] = acc;  // reduction result
  }
}
