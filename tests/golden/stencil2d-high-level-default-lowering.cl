typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb(map_glb((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) <<...
kernel void lift_kernel(const global float* restrict weights,
    const global float* restrict img,
    global float* restrict out,
    int H,
    int W) {
  {  // map_glb(map_glb((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      #pragma unroll
      for (int i = 0; i < 9; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(((0 <= gl_1 + i % 3 - 1 && gl_1 + i % 3 - 1 < W) ? ((0 <= gl + i / 3 - 1 && gl + i / 3 - 1 < H) ? img[-W + W*gl + W*(i / 3) + gl_1 + i % 3 - 1] : 0.0f) : 0.0f), weights[i]));  // add
      }
      out[W*gl + gl_1] = acc;  // reduction result
    }
  }
}
