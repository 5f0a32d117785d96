typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_wrg((b) => map_wrg((op) => map_lcl(map_lcl((w) => reduce_seq((acc, a) => add(acc, mult(get(0)...
kernel void conv2d(const global float* restrict in_,
    const global float* restrict weight,
    global float* restrict out,
    int B,
    int IP,
    int H,
    int W,
    int OP,
    int KH,
    int KW) {
  {  // map_wrg((b) => map_wrg((op) => map_lcl(map_lcl((w) => reduce_seq((a...: one iteration per work-item
    int wg = get_group_id(1);
    {  // map_wrg((op) => map_lcl(map_lcl((w) => reduce_seq((acc, a) => add(a...: one iteration per work-item
      int wg_1 = get_group_id(0);
      for (int l = get_local_id(1); l < H - KH + 1; l += get_local_size(1)) {  // map_lcl(map_lcl((w) => reduce_seq((acc, a) => add(acc, mult(get(0) ...
        for (int l_1 = get_local_id(0); l_1 < -KW + W + 1; l_1 += get_local_size(0)) {  // map_lcl((w) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...
          float acc;  // acc for Float
          acc = 0.0f;  // initial value
          for (int i = 0; i < IP*KH*KW; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
            acc = add(acc, mult(in_[H*IP*W*wg + H*W*(i / (KH*KW)) + W*l + W*(i / KW % KH) + l_1 + i % KW], weight[IP*KH*KW*wg_1 + i]));  // add
          }
          out[-H*KW*OP*wg - H*KW*wg_1 + H*OP*W*wg + H*OP*wg + H*W*wg_1 + H*wg_1 + KH*KW*OP*wg + KH*KW*wg_1 - KH*OP*W*wg - KH*OP*wg - KH*W*wg_1 - KH*wg_1 - KW*OP*wg - KW*l - KW*wg_1 + OP*W*wg + OP*wg + W*l + W*wg_1 + l + l_1 + wg_1] = acc;  // reduction result
        }
      }
    }
  }
}
