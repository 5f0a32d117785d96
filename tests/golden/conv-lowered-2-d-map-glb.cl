typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb[rows](map_glb((win) => join << map_seq(map_seq(to_global((k) => reduce_seq((acc, p) => ad...
kernel void lift_kernel(const global float* restrict inp,
    const global float* restrict wts,
    global float* restrict out,
    int H,
    int W,
    int C,
    int M) {
  {  // map_glb[rows](map_glb((win) => join << map_seq(map_seq(to_global((k...: one iteration per work-item
    int gl_rows = get_global_id(1);
    {  // map_glb((win) => join << map_seq(map_seq(to_global((k) => reduce_se...: one iteration per work-item
      int gl = get_global_id(0);
      for (int i = 0; i < M / 4; i++) {  // map_seq(map_seq(to_global((k) => reduce_seq((acc, p) => add(acc, mu...
        #pragma unroll
        for (int i_1 = 0; i_1 < 4; i_1++) {  // map_seq(to_global((k) => reduce_seq((acc, p) => add(acc, mult(get(0...
          float acc;  // acc for Float
          acc = 0.0f;  // initial value
          for (int i_2 = 0; i_2 < 9*C; i_2++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
            acc = add(acc, mult(((0 <= gl + i_2 / C % 3 - 1 && gl + i_2 / C % 3 - 1 < W) ? ((0 <= gl_rows + i_2 / (3*C) - 1 && gl_rows + i_2 / (3*C) - 1 < H) ? inp[-C - C*W + C*W*gl_rows + C*W*(i_2 / (3*C)) + C*gl + C*(i_2 / C % 3) + i_2 % C] : 0.0f) : 0.0f), wts[36*C*i + 9*C*i_1 + i_2]));  // add
          }
          out[M*W*gl_rows + M*gl + 4*i + i_1] = acc;  // reduction result
        }
      }
    }
  }
}
