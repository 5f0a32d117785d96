typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

float bias_relu(float x, float b) {
  float y = x + b;
  return y > 0.0f ? y : 0.0f;
}

// map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1)...
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict w,
    const global float* restrict bias,
    global float* restrict out,
    int M,
    int K,
    int N) {
  {  // map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get(...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < K; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(x[K*gl + i], w[K*gl_1 + i]));  // add
      }
      out[N*gl + gl_1] = bias_relu(acc, bias[gl_1]);  // bias_relu
    }
  }
}
