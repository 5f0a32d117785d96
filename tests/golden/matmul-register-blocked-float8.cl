typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 mult(float8 x, float8 y) {
  return x * y;
}

float8 add(float8 x, float8 y) {
  return x + y;
}

float hsum8(float8 v) {
  return v.s0 + v.s1 + (v.s2 + v.s3) + (v.s4 + v.s5 + (v.s6 + v.s7));
}

// join << map_glb[row-blocks]((a_rows) => map(join) << transpose << map_glb((b_rows) => to_global(m...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict bt,
    global float* restrict out,
    int M,
    int K,
    int N) {
  {  // map_glb[row-blocks]((a_rows) => map(join) << transpose << map_glb((...: one iteration per work-item
    int gl_row_blocks = get_global_id(1);
    {  // map_glb((b_rows) => to_global(map_seq(map_seq(hsum8))) << reduce_se...: one iteration per work-item
      int gl = get_global_id(0);
      float8 acc[16];  // acc for [[<Float>8]4]4
      #pragma unroll
      for (int c = 0; c < 4; c++) {  // copy (initial value)
        #pragma unroll
        for (int c_1 = 0; c_1 < 4; c_1++) {  // copy (initial value)
          acc[4*c + c_1] = (float8)(0.0f);  // initial value
        }
      }
      for (int i_k8 = 0; i_k8 < K / 8; i_k8++) {  // reduce_seq[k8]((acc, ab) => map_seq((row_a) => map_seq((c_b) => add...
        #pragma unroll
        for (int i = 0; i < 4; i++) {  // map_seq((row_a) => map_seq((c_b) => add(get(0) << c_b, mult(get(1) ...
          #pragma unroll
          for (int i_1 = 0; i_1 < 4; i_1++) {  // map_seq((c_b) => add(get(0) << c_b, mult(get(1) << row_a, get(1) <<...
            acc[4*i + i_1] = add(acc[4*i + i_1], mult(((global float8*)a)[i_k8 + (4*K*gl_row_blocks + K*i) / 8], ((global float8*)bt)[i_k8 + (4*K*gl + K*i_1) / 8]));  // add
          }
        }
      }
      #pragma unroll
      for (int i_2 = 0; i_2 < 4; i_2++) {  // map_seq(map_seq(hsum8))
        #pragma unroll
        for (int i_3 = 0; i_3 < 4; i_3++) {  // map_seq(hsum8)
          out[4*N*gl_row_blocks + N*i_2 + 4*gl + i_3] = hsum8(acc[4*i_2 + i_3]);  // hsum8
        }
      }
    }
  }
}
