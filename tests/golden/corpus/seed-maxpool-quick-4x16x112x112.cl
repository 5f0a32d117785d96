float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

// map_wrg(map_wrg((img) => map_lcl(map_lcl((win) => reduce_seq(max_, -inf) << join << win), dim=1) ...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict out,
    int N,
    int C,
    int H,
    int W) {
  {  // map_wrg(map_wrg((img) => map_lcl(map_lcl((win) => reduce_seq(max_, ...: one iteration per work-item
    int wg = get_group_id(1);
    {  // map_wrg((img) => map_lcl(map_lcl((win) => reduce_seq(max_, -inf) <<...: one iteration per work-item
      int wg_1 = get_group_id(0);
      for (int l = get_local_id(1); l < H / 2; l += get_local_size(1)) {  // map_lcl(map_lcl((win) => reduce_seq(max_, -inf) << join << win), di...
        for (int l_1 = get_local_id(0); l_1 < W / 2; l_1 += get_local_size(0)) {  // map_lcl((win) => reduce_seq(max_, -inf) << join << win)
          float acc;  // acc for Float
          acc = -INFINITY;  // initial value
          #pragma unroll
          for (int i = 0; i < 4; i++) {  // reduce_seq(max_)
            acc = max_(acc, x[C*H*W*wg + H*W*wg_1 + 2*W*l + W*(i / 2) + 2*l_1 + i % 2]);  // max_
          }
          out[C*wg*(H / 2)*(W / 2) + l*(W / 2) + l_1 + wg_1*(H / 2)*(W / 2)] = acc;  // reduction result
        }
      }
    }
  }
}
