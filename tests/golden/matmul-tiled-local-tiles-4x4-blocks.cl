typedef struct { float _0; float _1; } Tuple_float_float;

float id(float x) {
  return x;
}

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// join << map_wrg[row-tiles]((a_rows) => map(join) << transpose << map_wrg[col-tiles]((b_rows) => l...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict bt,
    global float* restrict out,
    local float* tmp_0,
    local float* tmp_1,
    int M,
    int K,
    int N) {
  {  // map_wrg[row-tiles]((a_rows) => map(join) << transpose << map_wrg[co...: one iteration per work-item
    int wg_row_tiles = get_group_id(1);
    {  // map_wrg[col-tiles]((b_rows) => let((tiles) => join << map_lcl((a_bl...: one iteration per work-item
      int wg_col_tiles = get_group_id(0);
      for (int l = get_local_id(1); l < 32; l += get_local_size(1)) {  // map_lcl((rows) => map_lcl((p) => tuple(id << get(0) << p, id << get...
        for (int l_1 = get_local_id(0); l_1 < K; l_1 += get_local_size(0)) {  // map_lcl((p) => tuple(id << get(0) << p, id << get(1) << p))
          tmp_0[K*l + l_1] = id(a[K*l + 32*K*wg_row_tiles + l_1]);  // id
          tmp_1[K*l + l_1] = id(bt[K*l + 32*K*wg_col_tiles + l_1]);  // id
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);  // read-after-write: id [tmp_0[K*l + l_1]] in map_lcl((p) => tuple(id << get(0) << p, id << get(1) << p)) writes tmp_0 (local), read by other work-items: add [tmp_0[K*i + 4*K*l_2 + i_k]] in map_seq((c_b) => add(get(0) << c_b, mult(get(1) << row_a, get(1) <<...; read-after-write: id [tmp_1[K*l + l_1]] in map_lcl((p) => tuple(id << get(0) << p, id << get(1) << p)) writes tmp_1 (local), read by other work-items: add [tmp_1[K*i_1 + 4*K*l_3 + i_k]] in map_seq((c_b) => add(get(0) << c_b, mult(get(1) << row_a, get(1) <<...
      {  // map_lcl((a_blk) => map(join) << transpose << map_lcl((b_blk) => to_...: one iteration per work-item
        int l_2 = get_local_id(1);
        {  // map_lcl((b_blk) => to_global(map_seq(map_seq(id))) << reduce_seq[k]...: one iteration per work-item
          int l_3 = get_local_id(0);
          float acc[16];  // acc for [[Float]4]4
          #pragma unroll
          for (int c = 0; c < 4; c++) {  // copy (initial value)
            #pragma unroll
            for (int c_1 = 0; c_1 < 4; c_1++) {  // copy (initial value)
              acc[4*c + c_1] = 0.0f;  // initial value
            }
          }
          for (int i_k = 0; i_k < K; i_k++) {  // reduce_seq[k]((acc, ab) => map_seq((row_a) => map_seq((c_b) => add(...
            #pragma unroll
            for (int i = 0; i < 4; i++) {  // map_seq((row_a) => map_seq((c_b) => add(get(0) << c_b, mult(get(1) ...
              #pragma unroll
              for (int i_1 = 0; i_1 < 4; i_1++) {  // map_seq((c_b) => add(get(0) << c_b, mult(get(1) << row_a, get(1) <<...
                acc[4*i + i_1] = add(acc[4*i + i_1], mult(tmp_0[K*i + 4*K*l_2 + i_k], tmp_1[K*i_1 + 4*K*l_3 + i_k]));  // add
              }
            }
          }
          #pragma unroll
          for (int i_2 = 0; i_2 < 4; i_2++) {  // map_seq(map_seq(id))
            #pragma unroll
            for (int i_3 = 0; i_3 < 4; i_3++) {  // map_seq(id)
              out[N*i_2 + 4*N*l_2 + 32*N*wg_row_tiles + i_3 + 4*l_3 + 32*wg_col_tiles] = id(acc[4*i_2 + i_3]);  // id
            }
          }
        }
      }
    }
  }
}
