/*
 * argus's exact letterbox kernel (src/preprocess/letterbox.ts), in C: the same integer
 * arithmetic as the TypeScript loops it replaces, value for value (OpenCV's INTER_LINEAR for
 * 8-bit images: 11-bit weights, a horizontal pass into 32-bit sums, the vertical pass of
 * OpenCV's SIMD kernel; an exact 2x reduction is OpenCV's INTER_AREA 2x2 mean), normalised and
 * written planar into the model's float tensor. The taps are computed in TypeScript (one
 * place) and passed in. Built by `npm ci` (scripts/build.mjs) with the system's C compiler;
 * without it, the TypeScript loops run instead.
 *
 * letterbox(src, stride, y0, y1, b0, b1, px0, px1, pa0, pa1, area2, dst, d0, W, mo, q): mo a
 * Float64Array [m0, m1, m2, o0, o1, o2] (value = byte * m + o), q an Int32Array of the three
 * planes' offsets in dst, d0 the first row's offset within a plane, W the plane's width.
 *
 * letterboxYuv(src, sw, sh, tab, y0, …, q): the same from a yuv420p picture (ffmpeg's I420:
 * the Y plane, then U and V at half size, rounded up), each source row it reads converted to BGR as
 * swscale's x86 yuv420p → bgr24 converter does (tab: five 256-entry tables, see yuv.ts), so
 * the result equals converting the whole frame with ffmpeg first, value for value.
 * yuvToPacked(src, sw, sh, tab, dst, rgb): the whole picture converted, packed BGR (RGB with rgb).
 * useAvx2(on): tests only (see below).
 *
 * Speed without changing a value: the horizontal pass writes each channel's row apart, its sums
 * already >> 4 (they fit 16 bits), so the vertical pass runs 8 values at a time with OpenCV's
 * own SSE2 instructions (pmulhw is its `* w >> 16`); each result, a byte, is then normalised
 * through a 256-entry table per channel holding what `(float)(v * m + o)` gives for it. Rows of
 * a yuv420p picture are converted 32 pixels at a time with AVX2 where the CPU has it (the same
 * instructions as the SSE2 path on twice the width), chosen when the module loads.
 */
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, "letterbox: bad arguments"); return NULL; } } while (0)

/* A typed array of type `want`. With `owned`, not backed by a SharedArrayBuffer: a table checked
 * once and read again later must not change in between (another thread could make it point
 * anywhere). The source and the tensor may be shared: they are only read, or only written. */
static int typed(napi_env env, napi_value v, napi_typedarray_type want, void **data, size_t *len, int owned) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return 0;
  napi_typedarray_type t;
  napi_value buf;
  size_t off;
  if (napi_get_typedarray_info(env, v, &t, len, data, &buf, &off) != napi_ok || t != want) return 0;
  if (owned) {
    bool plain = false;
    if (napi_is_arraybuffer(env, buf, &plain) != napi_ok || !plain) return 0;
  }
  return 1;
}

/* The horizontal pass of one packed row, planar (out: three planes of dw), each sum >> 4: at most 255 * 2048 >> 4 = 32640, an int16. */
static void hpass(const uint8_t *row, const int32_t *px0, const int32_t *px1, const int32_t *pa0, const int32_t *pa1, size_t dw, int16_t *restrict out) {
  int16_t *restrict o0 = out, *restrict o1 = out + dw, *restrict o2 = out + 2 * dw;
  for (size_t x = 0; x < dw; x++) {
    const uint8_t *s0 = row + px0[x], *s1 = row + px1[x];
    const int32_t a = pa0[x], b = pa1[x];
    o0[x] = (int16_t)((s0[0] * a + s1[0] * b) >> 4);
    o1[x] = (int16_t)((s0[1] * a + s1[1] * b) >> 4);
    o2[x] = (int16_t)((s0[2] * a + s1[2] * b) >> 4);
  }
}


/* One yuv420p picture: its planes and the conversion tables. */
typedef struct {
  const uint8_t *y, *u, *v;
  size_t w, cw;
  const int32_t *ty, *tub, *tvr, *tug, *tvg;
  /* yCoeff, yOffset, ub, vr, ug, vg: the tables' coefficients */
  const int32_t *k;
} yuv_t;

static inline uint8_t clip8(int32_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* Pixel (x, r) as B, G, R bytes: swscale's Y + (coefficient · chroma >> 16), saturated. */
static inline void yuvpx(const yuv_t *p, size_t r, size_t x, uint8_t *bgr) {
  const int32_t Y = p->ty[p->y[r * p->w + x]];
  const size_t c = (r >> 1) * p->cw + (x >> 1);
  const uint8_t U = p->u[c], V = p->v[c];
  bgr[0] = clip8(Y + p->tub[U]);
  bgr[1] = clip8(Y + (p->tug[U] + p->tvg[V]));
  bgr[2] = clip8(Y + p->tvr[V]);
}


#if HAVE_AVX2_PATH
/* convrow's SIMD part with AVX2, 32 pixels at a time: the same instructions on twice the width, so the same values. Returns the first pixel not converted. */
__attribute__((target("avx2"))) static size_t convrow_avx2(const yuv_t *p, const uint8_t *restrict Y, const uint8_t *restrict U, const uint8_t *restrict V, uint8_t *restrict B, uint8_t *restrict G, uint8_t *restrict R) {
  const int32_t *k = p->k;
  const size_t w = p->w;
  const __m256i yc = _mm256_set1_epi16((int16_t)k[0]), yo = _mm256_set1_epi16((int16_t)k[1]), ub = _mm256_set1_epi16((int16_t)k[2]);
  const __m256i vr = _mm256_set1_epi16((int16_t)k[3]), ug = _mm256_set1_epi16((int16_t)k[4]), vg = _mm256_set1_epi16((int16_t)k[5]);
  const __m256i c1024 = _mm256_set1_epi16(1024);
  size_t x = 0;
  for (; x + 32 <= w; x += 32) {
    /* pixels x..x+15 and x+16..x+31 as 16-bit lanes, in order */
    const __m256i ya = _mm256_mulhi_epi16(_mm256_sub_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(Y + x))), 3), yo), yc);
    const __m256i yb = _mm256_mulhi_epi16(_mm256_sub_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(Y + x + 16))), 3), yo), yc);
    /* the 16 chroma values of those 32 pixels */
    const __m256i u = _mm256_subs_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(U + x / 2))), 3), c1024);
    const __m256i v = _mm256_subs_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(V + x / 2))), 3), c1024);
    const __m256i cb = _mm256_mulhi_epi16(u, ub), cr = _mm256_mulhi_epi16(v, vr), cg = _mm256_adds_epi16(_mm256_mulhi_epi16(u, ug), _mm256_mulhi_epi16(v, vg));
#define ARGUS_PLANE(C, OUT) do { \
      /* chroma c0..c15 doubled: c0 c0 c1 c1 … for pixels 0..15 (lo) and 16..31 (hi) */ \
      const __m256i dl = _mm256_unpacklo_epi16(C, C), dh = _mm256_unpackhi_epi16(C, C); /* lanes: [c0..3 c8..11], [c4..7 c12..15] doubled */ \
      const __m256i lo = _mm256_permute2x128_si256(dl, dh, 0x20), hi = _mm256_permute2x128_si256(dl, dh, 0x31); \
      const __m256i s = _mm256_packus_epi16(_mm256_adds_epi16(ya, lo), _mm256_adds_epi16(yb, hi)); \
      _mm256_storeu_si256((__m256i *)(OUT + x), _mm256_permute4x64_epi64(s, 0xD8)); \
    } while (0)
    ARGUS_PLANE(cb, B);
    ARGUS_PLANE(cg, G);
    ARGUS_PLANE(cr, R);
#undef ARGUS_PLANE
  }
  return x;
}
/* Whether convrow uses convrow_avx2: set once per process when the library loads (the CPU has AVX2), or by
 * useAvx2 (tests; for every thread). Atomic: worker threads may load the addon and convert rows too. */
static int avx2_ok = 0;
__attribute__((constructor)) static void detect_avx2(void) {
  __builtin_cpu_init();
  __atomic_store_n(&avx2_ok, __builtin_cpu_supports("avx2") ? 1 : 0, __ATOMIC_RELAXED);
}
#endif

/*
 * Row r converted whole into planar B, G, R bytes. With SSE2, 16 pixels at a time with the
 * instructions of swscale's own converter (pmulhw, saturating adds, packuswb), which give the
 * tables' values exactly; the tables for the rest of the row and without SSE2.
 */
static void convrow(const yuv_t *p, size_t r, uint8_t *restrict B, uint8_t *restrict G, uint8_t *restrict R) {
  const uint8_t *restrict Y = p->y + r * p->w, *restrict U = p->u + (r >> 1) * p->cw, *restrict V = p->v + (r >> 1) * p->cw;
  const size_t w = p->w;
  size_t x = 0;
#if HAVE_AVX2_PATH
  if (__atomic_load_n(&avx2_ok, __ATOMIC_RELAXED)) x = convrow_avx2(p, Y, U, V, B, G, R);
#endif
#if defined(__SSE2__)
  const int32_t *k = p->k;
  const __m128i yc = _mm_set1_epi16((int16_t)k[0]), yo = _mm_set1_epi16((int16_t)k[1]), ub = _mm_set1_epi16((int16_t)k[2]);
  const __m128i vr = _mm_set1_epi16((int16_t)k[3]), ug = _mm_set1_epi16((int16_t)k[4]), vg = _mm_set1_epi16((int16_t)k[5]);
  const __m128i c1024 = _mm_set1_epi16(1024), zero = _mm_setzero_si128();
  for (; x + 16 <= w; x += 16) {
    const __m128i y8 = _mm_loadu_si128((const __m128i *)(Y + x));
    const __m128i yl = _mm_mulhi_epi16(_mm_sub_epi16(_mm_slli_epi16(_mm_unpacklo_epi8(y8, zero), 3), yo), yc);
    const __m128i yh = _mm_mulhi_epi16(_mm_sub_epi16(_mm_slli_epi16(_mm_unpackhi_epi8(y8, zero), 3), yo), yc);
    const __m128i u = _mm_subs_epi16(_mm_slli_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(U + x / 2)), zero), 3), c1024);
    const __m128i v = _mm_subs_epi16(_mm_slli_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(V + x / 2)), zero), 3), c1024);
    const __m128i cb = _mm_mulhi_epi16(u, ub), cr = _mm_mulhi_epi16(v, vr), cg = _mm_adds_epi16(_mm_mulhi_epi16(u, ug), _mm_mulhi_epi16(v, vg));
    /* each chroma value serves two pixels */
    _mm_storeu_si128((__m128i *)(B + x), _mm_packus_epi16(_mm_adds_epi16(yl, _mm_unpacklo_epi16(cb, cb)), _mm_adds_epi16(yh, _mm_unpackhi_epi16(cb, cb))));
    _mm_storeu_si128((__m128i *)(G + x), _mm_packus_epi16(_mm_adds_epi16(yl, _mm_unpacklo_epi16(cg, cg)), _mm_adds_epi16(yh, _mm_unpackhi_epi16(cg, cg))));
    _mm_storeu_si128((__m128i *)(R + x), _mm_packus_epi16(_mm_adds_epi16(yl, _mm_unpacklo_epi16(cr, cr)), _mm_adds_epi16(yh, _mm_unpackhi_epi16(cr, cr))));
  }
#endif
  const int32_t *restrict ty = p->ty, *restrict tub = p->tub, *restrict tvr = p->tvr, *restrict tug = p->tug, *restrict tvg = p->tvg;
  for (; x < w; x++) {
    const int32_t y = ty[Y[x]];
    const uint8_t u = U[x >> 1], v = V[x >> 1];
    B[x] = clip8(y + tub[u]);
    G[x] = clip8(y + (tug[u] + tvg[v]));
    R[x] = clip8(y + tvr[v]);
  }
}

/*
 * One plane's taps of a converted row where each pixel's second column is its first + 1 (or
 * its first, with weight 0: the right edge): the two bytes read as one pair and multiplied by
 * the pair of weights (wts: a0 b0 a1 b1 …) with pmaddwd, 8 pixels at a time: the same sums.
 * P has at least one readable byte past its last column.
 */
static void htaps_pairs(const uint8_t *restrict P, const int32_t *restrict c0, const int32_t *restrict c1, const int16_t *restrict wts, size_t dw, int16_t *restrict out) {
  size_t x = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; x + 8 <= dw; x += 8) {
    __m128i v = zero;
#define ARGUS_PAIR(i) v = _mm_insert_epi16(v, (int)(P[c0[x + i]] | (P[c0[x + i] + 1] << 8)), i)
    ARGUS_PAIR(0); ARGUS_PAIR(1); ARGUS_PAIR(2); ARGUS_PAIR(3); ARGUS_PAIR(4); ARGUS_PAIR(5); ARGUS_PAIR(6); ARGUS_PAIR(7);
#undef ARGUS_PAIR
    const __m128i lo = _mm_madd_epi16(_mm_unpacklo_epi8(v, zero), _mm_loadu_si128((const __m128i *)(wts + 2 * x)));
    const __m128i hi = _mm_madd_epi16(_mm_unpackhi_epi8(v, zero), _mm_loadu_si128((const __m128i *)(wts + 2 * x + 8)));
    _mm_storeu_si128((__m128i *)(out + x), _mm_packs_epi32(_mm_srai_epi32(lo, 4), _mm_srai_epi32(hi, 4)));
  }
#endif
  for (; x < dw; x++) out[x] = (int16_t)((P[c0[x]] * wts[2 * x] + P[c1[x]] * wts[2 * x + 1]) >> 4);
}

/* The horizontal pass of source row r: the row converted whole (convrow, into bgr: three planes of p->w), then its taps (columns c0, c1) read: in pairs (wts) where the tables allow. */
static void hpass_yuv(const yuv_t *p, size_t r, const int32_t *restrict px0, const int32_t *restrict px1, const int32_t *restrict pa0, const int32_t *restrict pa1, const int16_t *restrict wts, size_t dw, int16_t *restrict out, uint8_t *restrict bgr) {
  uint8_t *restrict B = bgr, *restrict G = bgr + p->w, *restrict R = bgr + 2 * p->w;
  int16_t *restrict o0 = out, *restrict o1 = out + dw, *restrict o2 = out + 2 * dw;
  convrow(p, r, B, G, R);
  if (wts) {
    htaps_pairs(B, px0, px1, wts, dw, o0);
    htaps_pairs(G, px0, px1, wts, dw, o1);
    htaps_pairs(R, px0, px1, wts, dw, o2);
    return;
  }
  for (size_t x = 0; x < dw; x++) {
    const size_t c0 = (size_t)px0[x], c1 = (size_t)px1[x];
    const int32_t a = pa0[x], b = pa1[x];
    o0[x] = (int16_t)((B[c0] * a + B[c1] * b) >> 4);
    o1[x] = (int16_t)((G[c0] * a + G[c1] * b) >> 4);
    o2[x] = (int16_t)((R[c0] * a + R[c1] * b) >> 4);
  }
}

/* The vertical pass of one plane's row (OpenCV's: (h0 * w0 >> 16) + (h1 * w1 >> 16) + 2 >> 2, a byte), written through the plane's normalisation table. */
static void vpass(const int16_t *restrict h0, const int16_t *restrict h1, int32_t w0, int32_t w1, size_t dw, const float *restrict lut, float *restrict out) {
  size_t x = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi16((int16_t)w0), b = _mm_set1_epi16((int16_t)w1), two = _mm_set1_epi16(2);
  for (; x + 8 <= dw; x += 8) {
    const __m128i v = _mm_srai_epi16(_mm_add_epi16(_mm_add_epi16(_mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h0 + x)), a), _mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h1 + x)), b)), two), 2);
    int16_t t[8];
    _mm_storeu_si128((__m128i *)t, v);
    for (int i = 0; i < 8; i++) out[x + i] = lut[t[i]];
  }
#endif
  for (; x < dw; x++) out[x] = lut[((((int32_t)h0[x] * w0) >> 16) + (((int32_t)h1[x] * w1) >> 16) + 2) >> 2];
}

/* The planes of a yuv420p picture of sw × sh in a buffer of n bytes, and its tables; 0 if it does not fit. */
static int yuvplanes(napi_env env, napi_value vsrc, napi_value vw, napi_value vh, napi_value vtab, yuv_t *p, size_t *sw, size_t *sh) {
  uint8_t *src; int32_t *tab; size_t n, nt; int32_t w, h;
  if (!typed(env, vsrc, napi_uint8_array, (void **)&src, &n, 0) || !typed(env, vtab, napi_int32_array, (void **)&tab, &nt, 1) || nt != 5 * 256 + 6) return 0;
  /* Any size whose packed row (w * 3, the taps' offsets) is an int32: the sizes in 64 bits. A
   * picture wider than 65536 (65538x4: 262,144 pixels, taken by the source) was refused here. */
  if (napi_get_value_int32(env, vw, &w) != napi_ok || napi_get_value_int32(env, vh, &h) != napi_ok || w <= 0 || h <= 0 || w > INT32_MAX / 3) return 0;
  const size_t cw = ((size_t)w + 1) / 2, ch = ((size_t)h + 1) / 2;
  if ((uint64_t)w * (uint64_t)h + 2 * (uint64_t)cw * ch > (uint64_t)n) return 0;
  p->y = src; p->u = src + (size_t)w * h; p->v = p->u + cw * ch; p->w = (size_t)w; p->cw = cw;
  p->ty = tab; p->tub = tab + 256; p->tvr = tab + 512; p->tug = tab + 768; p->tvg = tab + 1024; p->k = tab + 1280;
  for (int i = 0; i < 6; i++) if (p->k[i] < -32768 || p->k[i] > 32767) return 0;
  *sw = (size_t)w; *sh = (size_t)h;
  return 1;
}

static napi_value yuvToPacked(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value a[6];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  yuv_t p; size_t sw, sh, nd; uint8_t *dst; bool rgb;
  if (argc != 6 || !yuvplanes(env, a[0], a[1], a[2], a[3], &p, &sw, &sh) || !typed(env, a[4], napi_uint8_array, (void **)&dst, &nd, 0) || nd < sw * sh * 3 || napi_get_value_bool(env, a[5], &rgb) != napi_ok) {
    napi_throw_type_error(env, NULL, "yuvToPacked: expected (yuv420p Uint8Array, width, height, Int32Array(1286) tables, Uint8Array of width*height*3, rgb)");
    return NULL;
  }
  uint8_t *rowbuf = malloc(3 * sw);
  if (!rowbuf) { napi_throw_error(env, NULL, "yuvToPacked: out of memory"); return NULL; }
  uint8_t *restrict B = rowbuf, *restrict G = rowbuf + sw, *restrict R = rowbuf + 2 * sw;
  /* the first and last bytes of each pixel: B and R, or R and B */
  const uint8_t *restrict first = rgb ? R : B, *restrict last = rgb ? B : R;
  for (size_t r = 0; r < sh; r++) {
    convrow(&p, r, B, G, R);
    uint8_t *restrict o = dst + r * sw * 3;
    for (size_t x = 0; x < sw; x++, o += 3) { o[0] = first[x]; o[1] = G[x]; o[2] = last[x]; }
  }
  free(rowbuf);
  return NULL;
}

/* letterbox (yuv: NULL) and letterboxYuv: a[0] the source, then (packed) a[1] the stride or (yuv) a[1..3] width, height, tables; the rest alike. */
static napi_value run(napi_env env, napi_callback_info info, int isyuv) {
  size_t argc = 18;
  napi_value all[18];
  CHECK(napi_get_cb_info(env, info, &argc, all, NULL, NULL));
  if (argc != (isyuv ? 18u : 16u)) { napi_throw_error(env, NULL, isyuv ? "letterboxYuv: expected 18 arguments" : "letterbox: expected 16 arguments"); return NULL; }
  /* a[k] as the packed call numbers them: the yuv call has two more before the tap tables. */
  napi_value *a = isyuv ? all + 2 : all;
  yuv_t yp; size_t ysw = 0, ysh = 0;
  if (isyuv && !yuvplanes(env, all[0], all[1], all[2], all[3], &yp, &ysw, &ysh)) { napi_throw_type_error(env, NULL, "letterboxYuv: expected a yuv420p Uint8Array of its width and height, and Int32Array(1286) tables (not in shared memory)"); return NULL; }
  uint8_t *src = NULL; float *dst; double *mo; int32_t *q;
  size_t nmo, nq;
  int32_t *y0, *y1, *b0, *b1, *px0, *px1, *pa0, *pa1;
  size_t nsrc, ndst, dh, dw, n1, n2, n3, n4, n5, n6;
  if ((!isyuv && !typed(env, a[0], napi_uint8_array, (void **)&src, &nsrc, 0)) || !typed(env, a[2], napi_int32_array, (void **)&y0, &dh, 1) || !typed(env, a[3], napi_int32_array, (void **)&y1, &n1, 1) ||
      !typed(env, a[4], napi_int32_array, (void **)&b0, &n2, 1) || !typed(env, a[5], napi_int32_array, (void **)&b1, &n3, 1) || !typed(env, a[6], napi_int32_array, (void **)&px0, &dw, 1) ||
      !typed(env, a[7], napi_int32_array, (void **)&px1, &n4, 1) || !typed(env, a[8], napi_int32_array, (void **)&pa0, &n5, 1) || !typed(env, a[9], napi_int32_array, (void **)&pa1, &n6, 1) ||
      !typed(env, a[11], napi_float32_array, (void **)&dst, &ndst, 0) || !typed(env, a[14], napi_float64_array, (void **)&mo, &nmo, 1) || !typed(env, a[15], napi_int32_array, (void **)&q, &nq, 1)) {
    napi_throw_type_error(env, NULL, "letterbox: expected Uint8Array, Int32Array, Float32Array and Float64Array arguments (the tables not in shared memory)");
    return NULL;
  }
  if (nmo != 6 || nq != 3) { napi_throw_range_error(env, NULL, "letterbox: mo needs 6 values and q 3"); return NULL; }
  if (n1 != dh || n2 != dh || n3 != dh || n4 != dw || n5 != dw || n6 != dw) { napi_throw_range_error(env, NULL, "letterbox: tap tables of different lengths"); return NULL; }
  int32_t stride, d0, W;
  bool area2;
  const double m[3] = { mo[0], mo[1], mo[2] }, o[3] = { mo[3], mo[4], mo[5] };
  if (isyuv) {
    stride = (int32_t)(ysw * 3); /* the taps' offsets are into a packed row of the picture */
    nsrc = ysw * ysh * 3; /* at most twice the picture's bytes, which fit */
  } else CHECK(napi_get_value_int32(env, a[1], &stride));
  CHECK(napi_get_value_bool(env, a[10], &area2));
  CHECK(napi_get_value_int32(env, a[12], &d0));
  CHECK(napi_get_value_int32(env, a[13], &W));
  // Bounds, so that no argument can make it read or write outside the arrays.
  if (stride <= 0 || W <= 0 || d0 < 0 || (int64_t)dw > W) { napi_throw_range_error(env, NULL, "letterbox: bad sizes"); return NULL; }
  int64_t maxSrc = 0, maxDst = 0;
  for (size_t y = 0; y < dh; y++) {
    int64_t r = (y0[y] > y1[y] ? y0[y] : y1[y]);
    if (y0[y] < 0 || y1[y] < 0) { napi_throw_range_error(env, NULL, "letterbox: bad row"); return NULL; }
    if (b0[y] < 0 || b0[y] > 2048 || b1[y] < 0 || b1[y] > 2048 || b0[y] + b1[y] > 2049) { napi_throw_range_error(env, NULL, "letterbox: a row weight outside 0-2048, or a pair over 2049"); return NULL; }
    if (area2) r = 2 * (int64_t)y + 1;
    if ((r + 1) * (int64_t)stride > maxSrc) maxSrc = (r + 1) * (int64_t)stride;
  }
  for (size_t x = 0; x < dw; x++) {
    if (pa0[x] < 0 || pa0[x] > 2048 || pa1[x] < 0 || pa1[x] > 2048 || pa0[x] + pa1[x] > 2049) { napi_throw_range_error(env, NULL, "letterbox: a column weight outside 0-2048, or a pair over 2049"); return NULL; }
    int32_t p = px0[x] > px1[x] ? px0[x] : px1[x];
    if (px0[x] < 0 || px1[x] < 0 || (int64_t)p + 3 > stride || (area2 && (int64_t)(6 * x + 6) > (int64_t)stride)) { napi_throw_range_error(env, NULL, "letterbox: bad column"); return NULL; }
  }
  maxDst = (int64_t)d0 + (int64_t)(dh > 0 ? dh - 1 : 0) * W + (int64_t)dw;
  for (int i = 0; i < 3; i++) if (q[i] < 0 || (int64_t)q[i] + maxDst > (int64_t)ndst) { napi_throw_range_error(env, NULL, "letterbox: tensor too small"); return NULL; }
  if (maxSrc > (int64_t)nsrc) { napi_throw_range_error(env, NULL, "letterbox: source too small"); return NULL; }

  const size_t n = dw * 3;
  /* value v of channel c → (float)(v * m[c] + o[c]), the per-value arithmetic of the TypeScript loops, once per value */
  float lut[3][256];
  for (int c = 0; c < 3; c++) for (int v = 0; v < 256; v++) lut[c][v] = (float)(v * m[c] + o[c]);
  int16_t *bufs = malloc(sizeof(int16_t) * (n ? 2 * n : 1));
  uint8_t *row = malloc(n ? n : 1);
  /* yuv: the taps' columns (the tables hold offsets into a packed row), once per call */
  int32_t *cols = isyuv ? malloc(sizeof(int32_t) * (dw ? 2 * dw : 1)) : NULL;
  uint8_t *conv = isyuv ? malloc(3 * ysw + 1) : NULL; /* one source row converted, planar (and a byte past the last plane's end: the pairs read it, weighted 0) */
  if (!bufs || !row || (isyuv && (!cols || !conv))) { free(bufs); free(row); free(cols); free(conv); napi_throw_error(env, NULL, "letterbox: out of memory"); return NULL; }
  if (isyuv) conv[3 * ysw] = 0; /* the byte past the last plane, read by the pairs at weight 0: never uninitialised */
  /* yuv: the taps' weights in pairs where every pixel's second column is its first + 1 (or its first, weighted 0) */
  int16_t *wts = NULL;
  if (isyuv) {
    int pairs = 1;
    for (size_t x = 0; x < dw; x++) {
      cols[x] = px0[x] / 3;
      cols[dw + x] = px1[x] / 3;
      if (!(cols[dw + x] == cols[x] + 1 || (cols[dw + x] == cols[x] && pa1[x] == 0))) pairs = 0;
    }
    if (pairs && dw > 0 && (wts = malloc(sizeof(int16_t) * 2 * dw)) != NULL)
      for (size_t x = 0; x < dw; x++) { wts[2 * x] = (int16_t)pa0[x]; wts[2 * x + 1] = (int16_t)pa1[x]; }
  }
  int32_t held[2] = { -1, -1 };
  float *p0 = dst + q[0], *p1 = dst + q[1], *p2 = dst + q[2];
  for (size_t y = 0; y < dh; y++) {
    int64_t d = (int64_t)d0 + (int64_t)y * W;
    if (area2 && isyuv) {
      uint8_t t0[3], t1[3], t2[3], t3[3];
      for (size_t x = 0, k = 0; x < dw; x++) {
        yuvpx(&yp, 2 * y, 2 * x, t0); yuvpx(&yp, 2 * y, 2 * x + 1, t1); yuvpx(&yp, 2 * y + 1, 2 * x, t2); yuvpx(&yp, 2 * y + 1, 2 * x + 1, t3);
        for (int c = 0; c < 3; c++, k++) row[k] = (uint8_t)((t0[c] + t1[c] + t2[c] + t3[c] + 2) >> 2);
      }
      for (size_t x = 0, s = 0; x < dw; x++, s += 3, d++) {
        p0[d] = lut[0][row[s]];
        p1[d] = lut[1][row[s + 1]];
        p2[d] = lut[2][row[s + 2]];
      }
      continue;
    }
    if (area2) {
      const uint8_t *s0 = src + (size_t)(2 * y) * stride, *s1 = s0 + stride;
      for (size_t x = 0, k = 0; x < dw; x++) {
        const size_t b = 6 * x;
        for (int c = 0; c < 3; c++, k++) row[k] = (uint8_t)((s0[b + c] + s0[b + 3 + c] + s1[b + c] + s1[b + 3 + c] + 2) >> 2);
      }
      for (size_t x = 0, s = 0; x < dw; x++, s += 3, d++) {
        p0[d] = lut[0][row[s]];
        p1[d] = lut[1][row[s + 1]];
        p2[d] = lut[2][row[s + 2]];
      }
      continue;
    }
    // The two horizontal-pass rows, each computed once while consecutive output rows share it.
    int32_t r0 = y0[y], r1 = y1[y];
    int i0 = held[0] == r0 ? 0 : held[1] == r0 ? 1 : -1;
    if (i0 < 0) {
      i0 = held[0] == r1 ? 1 : 0;
      if (isyuv) hpass_yuv(&yp, (size_t)r0, cols, cols + dw, pa0, pa1, wts, dw, bufs + i0 * n, conv);
      else hpass(src + (size_t)r0 * stride, px0, px1, pa0, pa1, dw, bufs + i0 * n);
      held[i0] = r0;
    }
    int i1 = held[0] == r1 ? 0 : held[1] == r1 ? 1 : -1;
    if (i1 < 0) {
      i1 = i0 == 0 ? 1 : 0;
      if (isyuv) hpass_yuv(&yp, (size_t)r1, cols, cols + dw, pa0, pa1, wts, dw, bufs + i1 * n, conv);
      else hpass(src + (size_t)r1 * stride, px0, px1, pa0, pa1, dw, bufs + i1 * n);
      held[i1] = r1;
    }
    const int16_t *h0 = bufs + i0 * n, *h1 = bufs + i1 * n;
    vpass(h0, h1, b0[y], b1[y], dw, lut[0], p0 + d);
    vpass(h0 + dw, h1 + dw, b0[y], b1[y], dw, lut[1], p1 + d);
    vpass(h0 + 2 * dw, h1 + 2 * dw, b0[y], b1[y], dw, lut[2], p2 + d);
  }
  free(bufs);
  free(row);
  free(cols);
  free(conv);
  free(wts);
  return NULL;
}

static napi_value letterbox(napi_env env, napi_callback_info info) { return run(env, info, 0); }

/* useAvx2(on): tests run the conversion with and without AVX2 (both give the same values); returns whether it is now used (never where the CPU lacks it). */
static napi_value useAvx2(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value a[1], r;
  bool on = false;
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc != 1 || napi_get_value_bool(env, a[0], &on) != napi_ok) { napi_throw_type_error(env, NULL, "useAvx2: expected a boolean"); return NULL; }
#if HAVE_AVX2_PATH
  const int use = on && __builtin_cpu_supports("avx2") ? 1 : 0;
  __atomic_store_n(&avx2_ok, use, __ATOMIC_RELAXED);
  CHECK(napi_get_boolean(env, use != 0, &r));
#else
  CHECK(napi_get_boolean(env, false, &r));
#endif
  return r;
}
static napi_value letterboxYuv(napi_env env, napi_callback_info info) { return run(env, info, 1); }

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  const struct { const char *name; napi_callback cb; } fns[] = { { "letterbox", letterbox }, { "letterboxYuv", letterboxYuv }, { "yuvToPacked", yuvToPacked }, { "useAvx2", useAvx2 } };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn) != napi_ok) return NULL;
    if (napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok) return NULL;
  }
  return exports;
}
