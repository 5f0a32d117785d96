typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// (xy) => join << map_wrg[groups]((grp) => map_lcl[combine-lcl](to_global((sums) => reduce_seq(add,...
kernel void partial(const global float* restrict x,
    const global float* restrict y,
    global float* restrict tmp,
    int N) {
  local float tmp_1[64];  // temp for [Float]64
  {  // map_wrg[groups]((grp) => map_lcl[combine-lcl](to_global((sums) => r...: one iteration per work-item
    int wg_groups = get_group_id(0);
    for (int l = get_local_id(0); l < 64; l += get_local_size(0)) {  // map_lcl((chunk) => reduce_seq((acc, p) => add(acc, mult(get(0) << p...
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < 64; i++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
        acc = add(acc, mult(x[i + 64*l + 4096*wg_groups], y[i + 64*l + 4096*wg_groups]));  // add
      }
      tmp_1[l] = acc;  // reduction result
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // read-after-write: reduction result [tmp_1[l]] in map_lcl((chunk) => reduce_seq((acc, p) => add(acc, mult(get(0) << p... writes tmp_1 (local), read by other work-items: add [tmp_1[i_1 + 2*l_combine_lcl]] in reduce_seq(add)
    {  // map_lcl[combine-lcl](to_global((sums) => reduce_seq(add, 0.0) << su...: one iteration per work-item
      int l_combine_lcl = get_local_id(0);
      float acc_1;  // acc for Float
      acc_1 = 0.0f;  // initial value
      #pragma unroll
      for (int i_1 = 0; i_1 < 2; i_1++) {  // reduce_seq(add)
        acc_1 = add(acc_1, tmp_1[i_1 + 2*l_combine_lcl]);  // add
      }
      tmp[l_combine_lcl + 32*wg_groups] = acc_1;  // reduction result
    }
  }
}

// (parts) => reduce_seq[final](add, 0.0) << parts
kernel void final(global float* restrict out,
    global float* restrict tmp,
    int N) {
  float acc_2;  // acc for Float
  acc_2 = 0.0f;  // initial value
  for (int i_final = 0; i_final < N / 128; i_final++) {  // reduce_seq[final](add)
    acc_2 = add(acc_2, tmp[i_final]);  // add
  }
  out[0] = acc_2;  // reduction result
}
