typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

// map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(acc, mult(get(0) <...
kernel void fcrelu(const global float* restrict in_,
    const global float* restrict weight,
    const global float* restrict bias,
    global float* restrict out,
    int B,
    int I,
    int O) {
  {  // map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(acc...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < I; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(in_[I*gl + i], weight[I*gl_1 + i]));  // add
      }
      out[O*gl + gl_1] = max_(add(bias[gl_1], acc), 0.0f);  // max_
    }
  }
}
