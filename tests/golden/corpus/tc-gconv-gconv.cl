typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_wrg((n) => map_wrg((g) => map_lcl((o) => map_seq(map_lcl((w) => add(reduce_seq((acc, a) => ad...
kernel void gconv(const global float* restrict I,
    const global float* restrict W1,
    const global float* restrict B,
    global float* restrict out,
    int N,
    int G,
    int C,
    int H,
    int W,
    int F,
    int KH,
    int KW) {
  {  // map_wrg((n) => map_wrg((g) => map_lcl((o) => map_seq(map_lcl((w) =>...: one iteration per work-item
    int wg = get_group_id(1);
    {  // map_wrg((g) => map_lcl((o) => map_seq(map_lcl((w) => add(reduce_seq...: one iteration per work-item
      int wg_1 = get_group_id(0);
      for (int l = get_local_id(1); l < F; l += get_local_size(1)) {  // map_lcl((o) => map_seq(map_lcl((w) => add(reduce_seq((acc, a) => ad...
        for (int i = 0; i < H - KH + 1; i++) {  // map_seq(map_lcl((w) => add(reduce_seq((acc, a) => add(acc, mult(get...
          for (int l_1 = get_local_id(0); l_1 < -KW + W + 1; l_1 += get_local_size(0)) {  // map_lcl((w) => add(reduce_seq((acc, a) => add(acc, mult(get(0) << a...
            float acc;  // acc for Float
            acc = 0.0f;  // initial value
            for (int i_1 = 0; i_1 < C*KH*KW; i_1++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
              acc = add(acc, mult(I[C*G*H*W*wg + C*H*W*wg_1 + H*W*(i_1 / (KH*KW)) + W*i + W*(i_1 / KW % KH) + l_1 + i_1 % KW], W1[C*F*KH*KW*wg_1 + C*KH*KW*l + i_1]));  // add
            }
            out[-F*G*H*KW*wg + F*G*H*W*wg + F*G*H*wg + F*G*KH*KW*wg - F*G*KH*W*wg - F*G*KH*wg - F*G*KW*wg + F*G*W*wg + F*G*wg - F*H*KW*wg_1 + F*H*W*wg_1 + F*H*wg_1 + F*KH*KW*wg_1 - F*KH*W*wg_1 - F*KH*wg_1 - F*KW*wg_1 + F*W*wg_1 + F*wg_1 - H*KW*l + H*W*l + H*l + KH*KW*l - KH*W*l - KH*l - KW*i - KW*l + W*i + W*l + i + l + l_1] = add(acc, B[l]);  // add
          }
        }
      }
    }
  }
}
