typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_wrg[rows](map_lcl[pixels](to_global((nbh) => reduce_seq((acc, p) => add(acc, mult(get(0) << p...
kernel void lift_kernel(const global float* restrict weights,
    const global float* restrict img,
    global float* restrict out,
    int H,
    int W) {
  {  // map_wrg[rows](map_lcl[pixels](to_global((nbh) => reduce_seq((acc, p...: one iteration per work-item
    int wg_rows = get_group_id(0);
    for (int l_pixels = get_local_id(0); l_pixels < W; l_pixels += get_local_size(0)) {  // map_lcl[pixels](to_global((nbh) => reduce_seq((acc, p) => add(acc, ...
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      #pragma unroll
      for (int i = 0; i < 9; i++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
        acc = add(acc, mult(((0 <= l_pixels + i % 3 - 1 && l_pixels + i % 3 - 1 < W) ? ((0 <= wg_rows + i / 3 - 1 && wg_rows + i / 3 - 1 < H) ? img[-W + W*wg_rows + W*(i / 3) + l_pixels + i % 3 - 1] : 0.0f) : 0.0f), weights[i]));  // add
      }
      out[W*wg_rows + l_pixels] = acc;  // reduction result
    }
  }
}
