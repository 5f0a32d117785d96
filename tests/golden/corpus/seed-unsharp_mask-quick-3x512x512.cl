typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

float sharpen_mask(float img, float blur) {
  float sharp = img * 4.0f - blur * 3.0f;
  return fabs(img - blur) < 0.001f ? img : sharp;
}

// map_wrg((img) => map_lcl((rows) => map_seq(sharpen_mask) << zip(get(0) << rows, get(1) << rows)) ...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict out,
    global float* restrict tmp,
    global float* restrict tmp_1,
    int C,
    int H,
    int W) {
  {  // map_wrg((img) => map_lcl((rows) => map_seq(sharpen_mask) << zip(get...: one iteration per work-item
    int wg = get_group_id(0);
    for (int l = get_local_id(0); l < H; l += get_local_size(0)) {  // map_lcl((row) => map_seq((win) => add(add(add(add(mult(at(0) << win...
      for (int i = 0; i < W; i++) {  // map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...
        tmp[H*W*wg + W*l + i] = add(add(add(add(mult(((0 <= i - 2) ? x[H*W*wg + W*l + i - 2] : 0.0f), 0.0625f), mult(((0 <= i - 1) ? x[H*W*wg + W*l + i - 1] : 0.0f), 0.25f)), mult(x[H*W*wg + W*l + i], 0.375f)), mult(((i + 1 < W) ? x[H*W*wg + W*l + i + 1] : 0.0f), 0.25f)), mult(((i + 2 < W) ? x[H*W*wg + W*l + i + 2] : 0.0f), 0.0625f));  // add
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);  // read-after-write: add [tmp[H*W*wg + W*l + i]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp (global), read by other work-items: add [tmp[H*W*wg - 2*W + W*i_1 + l_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...; read-after-write: add [tmp[H*W*wg + W*l + i]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp (global), read by other work-items: add [tmp[H*W*wg - W + W*i_1 + l_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...; read-after-write: add [tmp[H*W*wg + W*l + i]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp (global), read by other work-items: add [tmp[H*W*wg + W*i_1 + l_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...; read-after-write: add [tmp[H*W*wg + W*l + i]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp (global), read by other work-items: add [tmp[H*W*wg + W + W*i_1 + l_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...; read-after-write: add [tmp[H*W*wg + W*l + i]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp (global), read by other work-items: add [tmp[H*W*wg + 2*W + W*i_1 + l_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...
    for (int l_1 = get_local_id(0); l_1 < W; l_1 += get_local_size(0)) {  // map_lcl((row) => map_seq((win) => add(add(add(add(mult(at(0) << win...
      for (int i_1 = 0; i_1 < H; i_1++) {  // map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a...
        tmp_1[H*W*wg + H*l_1 + i_1] = add(add(add(add(mult(((0 <= i_1 - 2) ? tmp[H*W*wg - 2*W + W*i_1 + l_1] : 0.0f), 0.0625f), mult(((0 <= i_1 - 1) ? tmp[H*W*wg - W + W*i_1 + l_1] : 0.0f), 0.25f)), mult(tmp[H*W*wg + W*i_1 + l_1], 0.375f)), mult(((i_1 + 1 < H) ? tmp[H*W*wg + W + W*i_1 + l_1] : 0.0f), 0.25f)), mult(((i_1 + 2 < H) ? tmp[H*W*wg + 2*W + W*i_1 + l_1] : 0.0f), 0.0625f));  // add
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);  // read-after-write: add [tmp_1[H*W*wg + H*l_1 + i_1]] in map_seq((win) => add(add(add(add(mult(at(0) << win, 0.0625), mult(a... writes tmp_1 (global), read by other work-items: sharpen_mask [tmp_1[H*W*wg + H*i_2 + l_2]] in map_seq(sharpen_mask)
    for (int l_2 = get_local_id(0); l_2 < H; l_2 += get_local_size(0)) {  // map_lcl((rows) => map_seq(sharpen_mask) << zip(get(0) << rows, get(...
      for (int i_2 = 0; i_2 < W; i_2++) {  // map_seq(sharpen_mask)
        out[H*W*wg + W*l_2 + i_2] = sharpen_mask(x[H*W*wg + W*l_2 + i_2], tmp_1[H*W*wg + H*i_2 + l_2]);  // sharpen_mask
      }
    }
  }
}
