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

// (k0, k1, k2) => map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get...
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict w1,
    const global float* restrict b1,
    global float* restrict tmp,
    int M,
    int K,
    int N,
    int H,
    int W) {
  {  // map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get(...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < K; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(x[K*gl + i], w1[K*gl_1 + i]));  // add
      }
      tmp[N*gl + gl_1] = bias_relu(acc, b1[gl_1]);  // bias_relu
    }
  }
}

// (k0, k1, k2) => map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get...
kernel void lift_kernel_1(const global float* restrict w2,
    const global float* restrict b2,
    global float* restrict tmp,
    global float* restrict tmp_1,
    int M,
    int K,
    int N,
    int H,
    int W) {
  {  // map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add...: one iteration per work-item
    int gl_2 = get_global_id(1);
    {  // map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get(...: one iteration per work-item
      int gl_3 = get_global_id(0);
      float acc_1;  // acc for Float
      acc_1 = 0.0f;  // initial value
      for (int i_1 = 0; i_1 < N; i_1++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_1 = add(acc_1, mult(tmp[N*gl_2 + i_1], w2[N*gl_3 + i_1]));  // add
      }
      tmp_1[H*gl_2 + gl_3] = bias_relu(acc_1, b2[gl_3]);  // bias_relu
    }
  }
}

// (k0, k1, k2) => map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get...
kernel void lift_kernel_2(const global float* restrict w3,
    const global float* restrict b3,
    global float* restrict out,
    global float* restrict tmp_1,
    int M,
    int K,
    int N,
    int H,
    int W) {
  {  // map_glb((r) => map_glb((wb) => bias_relu(reduce_seq((acc, a) => add...: one iteration per work-item
    int gl_4 = get_global_id(1);
    {  // map_glb((wb) => bias_relu(reduce_seq((acc, a) => add(acc, mult(get(...: one iteration per work-item
      int gl_5 = get_global_id(0);
      float acc_2;  // acc for Float
      acc_2 = 0.0f;  // initial value
      for (int i_2 = 0; i_2 < H; i_2++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_2 = add(acc_2, mult(tmp_1[H*gl_4 + i_2], w3[H*gl_5 + i_2]));  // add
      }
      out[W*gl_4 + gl_5] = bias_relu(acc_2, b3[gl_5]);  // bias_relu
    }
  }
}
