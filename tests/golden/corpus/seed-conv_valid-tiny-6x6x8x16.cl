typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb(map_glb((win) => map_glb((k) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) ...
kernel void lift_kernel(const global float* restrict inp,
    const global float* restrict wts,
    global float* restrict out,
    int H,
    int W,
    int C,
    int M) {
  {  // map_glb(map_glb((win) => map_glb((k) => reduce_seq((acc, a) => add(...: one iteration per work-item
    int gl = get_global_id(2);
    {  // map_glb((win) => map_glb((k) => reduce_seq((acc, a) => add(acc, mul...: one iteration per work-item
      int gl_1 = get_global_id(1);
      {  // map_glb((k) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...: one iteration per work-item
        int gl_2 = get_global_id(0);
        float acc;  // acc for Float
        acc = 0.0f;  // initial value
        for (int i = 0; i < 9*C; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
          acc = add(acc, mult(inp[C*W*gl + C*W*(i / (3*C)) + C*gl_1 + C*(i / C % 3) + i % C], wts[9*C*gl_2 + i]));  // add
        }
        out[M*W*gl - 2*M*gl + M*gl_1 + gl_2] = acc;  // reduction result
      }
    }
  }
}
