typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_wrg(map_lcl((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) <<...
kernel void lift_kernel(const global float* restrict weights,
    const global float* restrict img,
    global float* restrict out,
    int H,
    int W) {
  {  // map_wrg(map_lcl((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0...: one iteration per work-item
    int wg = get_group_id(0);
    for (int l = get_local_id(0); l < W; l += get_local_size(0)) {  // map_lcl((nbh) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ...
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      #pragma unroll
      for (int i = 0; i < 9; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(((0 <= l + i % 3 - 1 && l + i % 3 - 1 < W) ? ((0 <= wg + i / 3 - 1 && wg + i / 3 - 1 < H) ? img[-W + W*wg + W*(i / 3) + l + i % 3 - 1] : 0.0f) : 0.0f), weights[i]));  // add
      }
      out[W*wg + l] = acc;  // reduction result
    }
  }
}
