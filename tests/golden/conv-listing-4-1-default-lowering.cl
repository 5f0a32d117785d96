typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb(map_glb((win) => map_glb((k) => reduce_seq(add, 0.0) << map_seq(mult) << zip(win, k)) << ...
kernel void lift_kernel(const global float* restrict inp,
    const global float* restrict wts,
    global float* restrict out,
    global float* restrict tmp,
    int H,
    int W,
    int C,
    int M) {
  {  // map_glb(map_glb((win) => map_glb((k) => reduce_seq(add, 0.0) << map...: one iteration per work-item
    int gl = get_global_id(2);
    {  // map_glb((win) => map_glb((k) => reduce_seq(add, 0.0) << map_seq(mul...: one iteration per work-item
      int gl_1 = get_global_id(1);
      {  // map_glb((k) => reduce_seq(add, 0.0) << map_seq(mult) << zip(win, k)): one iteration per work-item
        int gl_2 = get_global_id(0);
        for (int i = 0; i < 9*C; i++) {  // map_seq(mult)
          tmp[9*C*M*W*gl + 9*C*M*gl_1 + 9*C*gl_2 + i] = mult(((0 <= gl_1 + i / C % 3 - 1 && gl_1 + i / C % 3 - 1 < W) ? ((0 <= gl + i / (3*C) - 1 && gl + i / (3*C) - 1 < H) ? inp[-C - C*W + C*W*gl + C*W*(i / (3*C)) + C*gl_1 + C*(i / C % 3) + i % C] : 0.0f) : 0.0f), wts[9*C*gl_2 + i]);  // mult
        }
        float acc;  // acc for Float
        acc = 0.0f;  // initial value
        for (int i_1 = 0; i_1 < 9*C; i_1++) {  // reduce_seq(add)
          acc = add(acc, tmp[9*C*M*W*gl + 9*C*M*gl_1 + 9*C*gl_2 + i_1]);  // add
        }
        out[M*W*gl + M*gl_1 + gl_2] = acc;  // reduction result
      }
    }
  }
}
