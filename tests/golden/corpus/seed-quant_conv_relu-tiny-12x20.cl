typedef struct { float _0; float _1; } Tuple_float_float;

float quantize(float x) {
  return floor(x * 16.0f) / 16.0f;
}

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

float relu(float x) {
  return x > 0.0f ? x : 0.0f;
}

// (k0) => map_glb(map_glb(quantize), dim=1) << k0
kernel void lift_kernel(const global float* restrict img,
    global float* restrict tmp,
    int H,
    int W) {
  {  // map_glb(map_glb(quantize), dim=1): one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb(quantize): one iteration per work-item
      int gl_1 = get_global_id(0);
      tmp[W*gl + gl_1] = quantize(img[W*gl + gl_1]);  // quantize
    }
  }
}

// (k0, k1) => map_glb(map_glb((nbh) => relu << reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...
kernel void lift_kernel_1(const global float* restrict w,
    global float* restrict out,
    global float* restrict tmp,
    int H,
    int W) {
  {  // map_glb(map_glb((nbh) => relu << reduce_seq((acc, a) => add(acc, mu...: one iteration per work-item
    int gl_2 = get_global_id(1);
    {  // map_glb((nbh) => relu << reduce_seq((acc, a) => add(acc, mult(get(0...: one iteration per work-item
      int gl_3 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      #pragma unroll
      for (int i = 0; i < 9; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(((0 <= gl_3 + i % 3 - 1 && gl_3 + i % 3 - 1 < W) ? ((0 <= gl_2 + i / 3 - 1 && gl_2 + i / 3 - 1 < H) ? tmp[-W + W*gl_2 + W*(i / 3) + gl_3 + i % 3 - 1] : 0.0f) : 0.0f), w[i]));  // add
      }
      out[W*gl_2 + gl_3] = relu(acc);  // relu
    }
  }
}
