float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

// map_wrg(map_wrg(map_lcl(map_lcl((j) => reduce_seq(max_, -inf) << join << j), dim=1)), dim=1) << m...
kernel void maxpool2x2(const global float* restrict in_,
    global float* restrict out,
    int B,
    int C,
    int H,
    int W) {
  {  // map_wrg(map_wrg(map_lcl(map_lcl((j) => reduce_seq(max_, -inf) << jo...: one iteration per work-item
    int wg = get_group_id(1);
    {  // map_wrg(map_lcl(map_lcl((j) => reduce_seq(max_, -inf) << join << j)...: one iteration per work-item
      int wg_1 = get_group_id(0);
      for (int l = get_local_id(1); l < H / 2; l += get_local_size(1)) {  // map_lcl(map_lcl((j) => reduce_seq(max_, -inf) << join << j), dim=1)
        for (int l_1 = get_local_id(0); l_1 < W / 2; l_1 += get_local_size(0)) {  // map_lcl((j) => reduce_seq(max_, -inf) << join << j)
          float acc;  // acc for Float
          acc = -INFINITY;  // initial value
          #pragma unroll
          for (int i = 0; i < 4; i++) {  // reduce_seq(max_)
            acc = max_(acc, in_[C*H*W*wg + H*W*wg_1 + 2*W*l + W*(i / 2) + 2*l_1 + i % 2]);  // max_
          }
          out[C*wg*(H / 2)*(W / 2) + l*(W / 2) + l_1 + wg_1*(H / 2)*(W / 2)] = acc;  // reduction result
        }
      }
    }
  }
}
