// UE8M0 / FP8 E4M3 kernels, compiled at run time with NVRTC (no includes).
//
// Rules every kernel keeps: no device assert, no trap, no early return before the warp-wide status
// flush (all 32 lanes reach it), and every output element it owns is written, whatever the input.
//
// Status word (two u64, zero = clean): [0] number of invalid values, [1] ~((index << 2) | reason) of
// the smallest invalid index, combined with atomicMax so that the first index wins whatever the
// scheduling. Reasons: 1 sign bit set, 2 exponent 255 (E8M0 NaN code), 3 non-zero mantissa.

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

#define ONE_BITS 0x3F800000u
#define ONE_CODE 127u
#define CANONICAL_NAN 0x7FFFFFFFu
#define AMAX_FLOOR_BITS 0x38D1B717u   // (float)1e-4
#define INV_448_BITS 0x3B124925u      // (float)(1.0f / 448.0f)

__device__ __forceinline__ u32 ceil_ue8m0_bits(u32 bits) {
    const u32 a = bits & 0x7FFFFFFFu;
    u32 e = (a >> 23) + ((a & 0x7FFFFFu) != 0u ? 1u : 0u);
    e = e < 1u ? 1u : (e > 254u ? 254u : e);
    return e << 23;
}

// 0 when `bits` is a UE8M0 scale, else the reason code.
__device__ __forceinline__ u32 invalid_reason(u32 bits) {
    if ((bits & 0x807FFFFFu) == 0u && (bits >> 23) != 0xFFu) return 0u;
    if (bits >> 31) return 1u;
    if ((bits >> 23) == 0xFFu) return 2u;
    return 3u;
}

struct Bad {
    u32 count;
    u64 best;  // max of ~((index << 2) | reason); 0 = none
    __device__ __forceinline__ void init() { count = 0u; best = 0ull; }
    __device__ __forceinline__ void check(u32 bits, u64 index) {
        const u32 r = invalid_reason(bits);
        if (r != 0u) {
            count += 1u;
            const u64 enc = ~((index << 2) | (u64)r);
            best = enc > best ? enc : best;
        }
    }
    // Called by all 32 lanes of every warp.
    __device__ __forceinline__ void flush(u64* status) {
        if (__ballot_sync(0xFFFFFFFFu, count != 0u) == 0u) return;
        u64 total = count;
        u64 b = best;
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            total += __shfl_xor_sync(0xFFFFFFFFu, total, o);
            const u64 other = __shfl_xor_sync(0xFFFFFFFFu, b, o);
            b = other > b ? other : b;
        }
        if ((threadIdx.x & 31u) == 0u) {
            atomicAdd(status, total);
            atomicMax(status + 1, b);
        }
    }
};

__device__ __forceinline__ u64 global_tid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 global_threads() { return (u64)gridDim.x * blockDim.x; }

__device__ __forceinline__ uint4 ceil4(uint4 v) {
    return make_uint4(ceil_ue8m0_bits(v.x), ceil_ue8m0_bits(v.y), ceil_ue8m0_bits(v.z),
                      ceil_ue8m0_bits(v.w));
}

// out[i] = ceil_to_ue8m0(in[i]); `vec` when both pointers are 16-byte aligned.
extern "C" __global__ void ue8m0_ceil(const u32* __restrict__ in, u32* __restrict__ out, u64 n,
                                      int vec) {
    const u64 tid = global_tid(), nt = global_threads();
    u64 done = 0;
    if (vec) {
        const u64 n4 = n / 4;
        const uint4* in4 = reinterpret_cast<const uint4*>(in);
        uint4* out4 = reinterpret_cast<uint4*>(out);
        for (u64 base = tid; base < n4; base += 4 * nt) {
            uint4 v[4];
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u64 i = base + j * nt;
                if (i < n4) v[j] = __ldcs(in4 + i);
            }
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u64 i = base + j * nt;
                if (i < n4) __stcs(out4 + i, ceil4(v[j]));
            }
        }
        done = n4 * 4;
    }
    for (u64 i = done + tid; i < n; i += nt) out[i] = ceil_ue8m0_bits(in[i]);
}

__device__ __forceinline__ u32 pack4(uint4 v) {
    return (v.x >> 23 & 0xFFu) | (v.y >> 23 & 0xFFu) << 8 | (v.z >> 23 & 0xFFu) << 16 |
           (v.w >> 23 & 0xFFu) << 24;
}

// Cheap test of four values: sign or mantissa bits anywhere, or +inf (the only sign-0,
// mantissa-0 value with exponent 255). The per-element path runs only when it fires.
__device__ __forceinline__ bool any_invalid4(uint4 v) {
    return ((v.x | v.y | v.z | v.w) & 0x807FFFFFu) != 0u || v.x == 0x7F800000u ||
           v.y == 0x7F800000u || v.z == 0x7F800000u || v.w == 0x7F800000u;
}

__device__ __forceinline__ void check4(Bad& bad, uint4 v, u64 first) {
    if (!any_invalid4(v)) return;
    bad.check(v.x, first);
    bad.check(v.y, first + 1);
    bad.check(v.z, first + 2);
    bad.check(v.w, first + 3);
}

// out[w] = UE8M0 bytes of in[4w .. 4w+4] (little-endian); validates every input into `status`.
// `out` may be null: validation only. `vec`: `in` is 16-byte aligned.
extern "C" __global__ void ue8m0_pack(const u32* __restrict__ in, u32* __restrict__ out,
                                      u64 words, int vec, u64* status) {
    const u64 tid = global_tid(), nt = global_threads();
    Bad bad;
    bad.init();
    for (u64 base = tid; base < words; base += 4 * nt) {
        uint4 v[4];
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const u64 w = base + j * nt;
            if (w < words) {
                if (vec) {
                    v[j] = __ldcs(reinterpret_cast<const uint4*>(in) + w);
                } else {
                    v[j] = make_uint4(in[4 * w], in[4 * w + 1], in[4 * w + 2], in[4 * w + 3]);
                }
            }
        }
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const u64 w = base + j * nt;
            if (w < words) {
                check4(bad, v[j], 4 * w);
                if (out) __stcs(out + w, pack4(v[j]));
            }
        }
    }
    bad.flush(status);
}

// Validation of `n` values (any n). Same status protocol.
extern "C" __global__ void ue8m0_validate(const u32* __restrict__ in, u64 n, int vec, u64* status) {
    const u64 tid = global_tid(), nt = global_threads();
    Bad bad;
    bad.init();
    u64 done = 0;
    if (vec) {
        const u64 n4 = n / 4;
        for (u64 base = tid; base < n4; base += 4 * nt) {
            uint4 v[4];
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u64 i = base + j * nt;
                if (i < n4) v[j] = __ldcs(reinterpret_cast<const uint4*>(in) + i);
            }
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u64 i = base + j * nt;
                if (i < n4) check4(bad, v[j], 4 * i);
            }
        }
        done = n4 * 4;
    }
    for (u64 i = done + tid; i < n; i += nt) bad.check(in[i], i);
    bad.flush(status);
}

__device__ __forceinline__ u32 active_rows(const int* masked_m, u32 b, u32 mn) {
    if (masked_m == nullptr) return mn;
    const int v = masked_m[b];
    return v <= 0 ? 0u : ((u32)v > mn ? mn : (u32)v);
}

// MN-major TMA-aligned packed layout: out[(b * packed_k + kp) * tma_mn + m] packs
// sf[b, m, 4kp .. 4kp+4]. Alignment rows get 0, masked rows 1.0 (byte 127), missing bytes 0.
extern "C" __global__ void ue8m0_transform_mn_major(const u32* __restrict__ sf, u32* __restrict__ out,
                                                    u32 batches, u32 mn, u32 sf_k,
                                                    const int* masked_m, u64* status) {
    const u32 packed_k = (sf_k + 3u) / 4u;
    const u32 tma_mn = (mn + 3u) / 4u * 4u;
    const u64 total = (u64)batches * packed_k * tma_mn;
    const u64 tid = global_tid(), nt = global_threads();
    Bad bad;
    bad.init();
    for (u64 i = tid; i < total; i += nt) {
        const u32 m = (u32)(i % tma_mn);
        const u64 rest = i / tma_mn;
        const u32 kp = (u32)(rest % packed_k);
        const u32 b = (u32)(rest / packed_k);
        u32 word = 0u;
        if (m < mn) {
            const bool active = m < active_rows(masked_m, b, mn);
            const u64 row = ((u64)b * mn + m) * sf_k;
            #pragma unroll
            for (u32 j = 0; j < 4u; ++j) {
                const u32 k = kp * 4u + j;
                if (k < sf_k) {
                    u32 byte = ONE_CODE;
                    if (active) {
                        const u32 bits = __ldg(sf + row + k);
                        bad.check(bits, row + k);
                        byte = (bits >> 23) & 0xFFu;
                    }
                    word |= byte << (8u * j);
                }
            }
        }
        out[i] = word;
    }
    bad.flush(status);
}

// ---------------------------------------------------------------------------------------------
// Fused per-token-group quantisation.

__device__ __forceinline__ u32 group_scale_bits(u32 amax_bits, bool use_ue8m0) {
    const u32 clamped = amax_bits > AMAX_FLOOR_BITS ? amax_bits : AMAX_FLOOR_BITS;
    const float sf = __fmul_rn(__uint_as_float(clamped), __uint_as_float(INV_448_BITS));
    u32 bits = __float_as_uint(sf);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits = CANONICAL_NAN;
    return use_ue8m0 ? ceil_ue8m0_bits(bits) : bits;
}

// 1 / s for a UE8M0 scale s = 2^(e - 127), e in [1, 254]: exactly __frcp_rn(s), 2^-127 being
// the subnormal 0x00400000.
__device__ __forceinline__ float rcp_pow2(u32 sf_bits) {
    const u32 e = sf_bits >> 23;
    return __uint_as_float(e >= 254u ? 0x00400000u : (254u - e) << 23);
}

// Two floats to two E4M3 bytes (lo in the low byte), round-to-nearest-even, saturating.
__device__ __forceinline__ u32 cvt_e4m3x2(float lo, float hi) {
    u16 r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return (u32)r;
}

enum Layout { LAYOUT_F32 = 0, LAYOUT_PACKED_ROW = 1, LAYOUT_PACKED_MN = 2 };

// Elements per 16-byte chunk and chunks per lane, so that one warp covers 512 columns: one unit,
// the four groups of one packed word.
template <typename T> struct Elem;
template <> struct Elem<u16> {
    static constexpr int V = 8, CHUNKS = 2;
    __device__ __forceinline__ static float at(const uint4& c, int j) {
        const u32 w = (&c.x)[j / 2];
        return __uint_as_float((j & 1) ? (w & 0xFFFF0000u) : (w << 16));
    }
    __device__ __forceinline__ static uint4 load_scalar(const u16* p, u32 valid) {
        u32 w[4] = {0u, 0u, 0u, 0u};
        for (u32 j = 0; j < valid; ++j) w[j / 2] |= (u32)p[j] << (16u * (j & 1u));
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
};
template <> struct Elem<float> {
    static constexpr int V = 4, CHUNKS = 4;
    __device__ __forceinline__ static float at(const uint4& c, int j) {
        return __uint_as_float((&c.x)[j]);
    }
    __device__ __forceinline__ static uint4 load_scalar(const float* p, u32 valid) {
        u32 w[4] = {0u, 0u, 0u, 0u};
        for (u32 j = 0; j < valid; ++j) w[j] = __float_as_uint(p[j]);
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
};

template <int CHUNKS> struct Unit {
    u64 row;
    u32 kp, b, mrow;
    bool active;
    uint4 c[CHUNKS];
};

// Position of a unit: its row (flat, batch b, row mrow within the batch) and packed word kp.
// Warps walk the units with a constant stride; positions advance without 64-bit divisions.
struct Pos {
    u64 row;
    u32 kp, b, mrow;
};

__device__ __forceinline__ Pos pos_of(u64 u, u32 words, u32 m) {
    Pos p;
    p.row = u / words;
    p.kp = (u32)(u % words);
    p.b = (u32)(p.row / m);
    p.mrow = (u32)(p.row % m);
    return p;
}

// `step` is pos_of(stride); kp and mrow stay below words and m, so one carry each suffices.
__device__ __forceinline__ void advance(Pos& p, const Pos& step, u32 words, u32 m) {
    p.kp += step.kp;
    u32 carry = 0u;
    if (p.kp >= words) {
        p.kp -= words;
        carry = 1u;
    }
    p.row += step.row + carry;
    p.mrow += step.mrow + carry;
    p.b += step.b;
    if (p.mrow >= m) {
        p.mrow -= m;
        p.b += 1u;
    }
}

template <typename T, bool VEC>
__device__ __forceinline__ void load_unit(Unit<Elem<T>::CHUNKS>& un, const Pos& p, const T* __restrict__ x,
                                          const int* masked_m, u32 m, u32 k, u32 lane) {
    constexpr int V = Elem<T>::V, CHUNKS = Elem<T>::CHUNKS;
    un.row = p.row;
    un.kp = p.kp;
    un.b = p.b;
    un.mrow = p.mrow;
    un.active = un.mrow < active_rows(masked_m, un.b, m);
    if (!un.active) return;
    const u64 row_off = un.row * k;
    #pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch) {
        const u32 col = un.kp * 512u + ch * 32u * V + lane * V;
        if (VEC) {
            un.c[ch] = col < k ? __ldcs(reinterpret_cast<const uint4*>(x + row_off + col))
                               : make_uint4(0u, 0u, 0u, 0u);
        } else {
            const u32 valid = col < k ? min((u32)V, k - col) : 0u;
            un.c[ch] = Elem<T>::load_scalar(x + row_off + col, valid);
        }
    }
}

template <typename T, bool VEC, int LAYOUT>
__device__ __forceinline__ void process_unit(const Unit<Elem<T>::CHUNKS>& un, unsigned char* __restrict__ q,
                                             u32* __restrict__ scales, u32 k, u32 groups, u32 words,
                                             u32 tma_m, u32 lane, bool ue8m0) {
    typedef Elem<T> E;
    constexpr int V = E::V, CHUNKS = E::CHUNKS;
    constexpr int LANES_PER_GROUP = 128 / V;  // 16 for bf16, 32 for f32
    const u64 row = un.row;
    const u32 kp = un.kp;
    const u64 row_off = row * k;
    u32 sf_bits[CHUNKS];
    float inv_g[CHUNKS];
    if (un.active) {
        // max |x| on bits: non-negative floats order like their bits, NaN above inf.
        u32 part[CHUNKS];
        #pragma unroll
        for (int ch = 0; ch < CHUNKS; ++ch) {
            u32 amax = 0u;
            #pragma unroll
            for (int j = 0; j < V; ++j) amax = max(amax, __float_as_uint(E::at(un.c[ch], j)) & 0x7FFFFFFFu);
            part[ch] = amax;
        }
        if constexpr (CHUNKS == 4) {
            // f32: chunk ch is group ch, spread over all 32 lanes. Reduce-scatter the four maxima
            // (lane 8g ends up with group g), derive one scale per lane, then gather.
            const bool h16 = (lane & 16u) != 0u, h8 = (lane & 8u) != 0u;
            const u32 s0 = h16 ? part[0] : part[2 % CHUNKS], s1 = h16 ? part[1 % CHUNKS] : part[3 % CHUNKS];
            const u32 k0 = h16 ? part[2 % CHUNKS] : part[0], k1 = h16 ? part[3 % CHUNKS] : part[1 % CHUNKS];
            const u32 b0 = max(k0, __shfl_xor_sync(0xFFFFFFFFu, s0, 16));
            const u32 b1 = max(k1, __shfl_xor_sync(0xFFFFFFFFu, s1, 16));
            u32 c = max(h8 ? b1 : b0, __shfl_xor_sync(0xFFFFFFFFu, h8 ? b0 : b1, 8));
            #pragma unroll
            for (int o = 4; o > 0; o >>= 1) c = max(c, __shfl_xor_sync(0xFFFFFFFFu, c, o));
            const u32 sf = group_scale_bits(c, ue8m0);
            #pragma unroll
            for (int ch = 0; ch < CHUNKS; ++ch) sf_bits[ch] = __shfl_sync(0xFFFFFFFFu, sf, 8 * ch);
            if (ue8m0) {
                #pragma unroll
                for (int ch = 0; ch < CHUNKS; ++ch) inv_g[ch] = rcp_pow2(sf_bits[ch]);
            } else {
                const float inv = __frcp_rn(__uint_as_float(sf));
                #pragma unroll
                for (int ch = 0; ch < CHUNKS; ++ch) inv_g[ch] = __shfl_sync(0xFFFFFFFFu, inv, 8 * ch);
            }
        } else {
            #pragma unroll
            for (int ch = 0; ch < CHUNKS; ++ch) {
                u32 amax = part[ch];
                #pragma unroll
                for (int o = LANES_PER_GROUP / 2; o > 0; o >>= 1) amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
                sf_bits[ch] = group_scale_bits(amax, ue8m0);
                inv_g[ch] = __frcp_rn(__uint_as_float(sf_bits[ch]));
            }
        }
        #pragma unroll
        for (int ch = 0; ch < CHUNKS; ++ch) {
            const float inv = inv_g[ch];
            const u32 col = kp * 512u + ch * 32u * V + lane * V;
            u32 out[V / 4];
            #pragma unroll
            for (int w = 0; w < V / 4; ++w) {
                const u32 lo = cvt_e4m3x2(__fmul_rn(E::at(un.c[ch], 4 * w), inv), __fmul_rn(E::at(un.c[ch], 4 * w + 1), inv));
                const u32 hi = cvt_e4m3x2(__fmul_rn(E::at(un.c[ch], 4 * w + 2), inv), __fmul_rn(E::at(un.c[ch], 4 * w + 3), inv));
                out[w] = lo | (hi << 16);
            }
            if (col < k) {
                unsigned char* dst = q + row_off + col;
                if (VEC) {
                    if (V == 8) {
                        __stcs(reinterpret_cast<uint2*>(dst), make_uint2(out[0], out[V / 4 - 1]));
                    } else {
                        __stcs(reinterpret_cast<u32*>(dst), out[0]);
                    }
                } else {
                    const u32 valid = min((u32)V, k - col);
                    for (u32 j = 0; j < valid; ++j) dst[j] = (unsigned char)(out[j / 4] >> (8u * (j % 4u)));
                }
            }
        }
    } else {
        #pragma unroll
        for (int ch = 0; ch < CHUNKS; ++ch) {
            sf_bits[ch] = ONE_BITS;
            const u32 col = kp * 512u + ch * 32u * V + lane * V;
            if (col < k) {
                unsigned char* dst = q + row_off + col;
                if (VEC) {
                    if (V == 8) {
                        __stcs(reinterpret_cast<uint2*>(dst), make_uint2(0u, 0u));
                    } else {
                        __stcs(reinterpret_cast<u32*>(dst), 0u);
                    }
                } else {
                    const u32 valid = min((u32)V, k - col);
                    for (u32 j = 0; j < valid; ++j) dst[j] = 0;
                }
            }
        }
    }
    // Scales. Group of chunk `ch` for this lane: unit group index ch * 32 * V / 128 + lane / LANES_PER_GROUP.
    if (LAYOUT == LAYOUT_F32) {
        #pragma unroll
        for (int ch = 0; ch < CHUNKS; ++ch) {
            const u32 gi = ch * 32u * V / 128u + lane / LANES_PER_GROUP;
            const u32 g = kp * 4u + gi;
            if (lane % LANES_PER_GROUP == 0u && g < groups) scales[row * groups + g] = sf_bits[ch];
        }
    } else {
        u32 byte[4];
        if (V == 8) {
            // lanes 0-15 hold groups 0 and 2, lanes 16-31 groups 1 and 3.
            const u32 other0 = __shfl_xor_sync(0xFFFFFFFFu, sf_bits[0], 16);
            const u32 other1 = __shfl_xor_sync(0xFFFFFFFFu, sf_bits[CHUNKS - 1], 16);
            byte[0] = sf_bits[0] >> 23;
            byte[1] = other0 >> 23;
            byte[2] = sf_bits[CHUNKS - 1] >> 23;
            byte[3] = other1 >> 23;
        } else {
            #pragma unroll
            for (int gi = 0; gi < 4; ++gi) byte[gi] = sf_bits[gi % CHUNKS] >> 23;
        }
        if (lane == 0u) {
            u32 word = 0u;
            #pragma unroll
            for (u32 gi = 0; gi < 4u; ++gi) {
                if (kp * 4u + gi < groups) word |= (byte[gi] & 0xFFu) << (8u * gi);
            }
            if (LAYOUT == LAYOUT_PACKED_ROW) {
                scales[row * words + kp] = word;
            } else {
                scales[((u64)un.b * words + kp) * tma_m + un.mrow] = word;
            }
        }
    }
}

template <typename T, bool VEC, int LAYOUT>
__device__ __forceinline__ void quantize_impl(const T* __restrict__ x, unsigned char* __restrict__ q,
                                              u32* __restrict__ scales, const int* masked_m,
                                              u32 batches, u32 m, u32 k, int use_ue8m0) {
    constexpr int CHUNKS = Elem<T>::CHUNKS;
    const u32 groups = (k + 127u) / 128u;
    const u32 words = (groups + 3u) / 4u;
    const u32 tma_m = (m + 3u) / 4u * 4u;
    const u64 rows = (u64)batches * m;
    const u32 lane = threadIdx.x & 31u;
    const bool ue8m0 = use_ue8m0 != 0;

    // Alignment rows of the MN-major layout hold zeros.
    if (LAYOUT == LAYOUT_PACKED_MN && tma_m != m) {
        const u32 pad = tma_m - m;
        const u64 total = (u64)batches * words * pad;
        for (u64 i = global_tid(); i < total; i += global_threads()) {
            const u64 bw = i / pad;
            scales[bw * tma_m + m + (u32)(i % pad)] = 0u;
        }
    }

    const u64 warp = global_tid() / 32, nwarps = global_threads() / 32;
    const u64 units = rows * words;
    // Two units per iteration: both units' loads are in flight before either is reduced.
    if (warp >= units) return;  // whole warps only: no status flush in this kernel
    Pos pa = pos_of(warp, words, m), pb = pos_of(warp + nwarps, words, m);
    const Pos step = pos_of(2 * nwarps, words, m);
    for (u64 u0 = warp; u0 < units; u0 += 2 * nwarps) {
        Unit<CHUNKS> a, b;
        load_unit<T, VEC>(a, pa, x, masked_m, m, k, lane);
        const bool has_b = u0 + nwarps < units;  // warp-uniform
        if (has_b) load_unit<T, VEC>(b, pb, x, masked_m, m, k, lane);
        process_unit<T, VEC, LAYOUT>(a, q, scales, k, groups, words, tma_m, lane, ue8m0);
        if (has_b) process_unit<T, VEC, LAYOUT>(b, q, scales, k, groups, words, tma_m, lane, ue8m0);
        advance(pa, step, words, m);
        advance(pb, step, words, m);
    }
}

#define QUANT_KERNEL(NAME, T, VEC, LAYOUT)                                                         \
    extern "C" __global__ void __launch_bounds__(256) NAME(                                        \
        const T* __restrict__ x, unsigned char* __restrict__ q, u32* __restrict__ scales,          \
        const int* masked_m, u32 batches, u32 m, u32 k, int use_ue8m0) {                           \
        quantize_impl<T, VEC, LAYOUT>(x, q, scales, masked_m, batches, m, k, use_ue8m0);           \
    }

QUANT_KERNEL(ue8m0_quant_bf16_vec_f32, u16, true, LAYOUT_F32)
QUANT_KERNEL(ue8m0_quant_bf16_vec_row, u16, true, LAYOUT_PACKED_ROW)
QUANT_KERNEL(ue8m0_quant_bf16_vec_mn, u16, true, LAYOUT_PACKED_MN)
QUANT_KERNEL(ue8m0_quant_bf16_any_f32, u16, false, LAYOUT_F32)
QUANT_KERNEL(ue8m0_quant_bf16_any_row, u16, false, LAYOUT_PACKED_ROW)
QUANT_KERNEL(ue8m0_quant_bf16_any_mn, u16, false, LAYOUT_PACKED_MN)
QUANT_KERNEL(ue8m0_quant_f32_vec_f32, float, true, LAYOUT_F32)
QUANT_KERNEL(ue8m0_quant_f32_vec_row, float, true, LAYOUT_PACKED_ROW)
QUANT_KERNEL(ue8m0_quant_f32_vec_mn, float, true, LAYOUT_PACKED_MN)
QUANT_KERNEL(ue8m0_quant_f32_any_f32, float, false, LAYOUT_F32)
QUANT_KERNEL(ue8m0_quant_f32_any_row, float, false, LAYOUT_PACKED_ROW)
QUANT_KERNEL(ue8m0_quant_f32_any_mn, float, false, LAYOUT_PACKED_MN)

// Test helper: out[i] = e4m3(bits = base + i) for the exhaustive conversion check.
extern "C" __global__ void ue8m0_cvt_e4m3_range(u32 base, unsigned char* __restrict__ out, u32 n) {
    const u64 tid = global_tid(), nt = global_threads();
    for (u64 i = 2 * tid; i < n; i += 2 * nt) {
        const float a = __uint_as_float(base + (u32)i);
        const float b = __uint_as_float(base + (u32)i + 1u);
        const u32 r = cvt_e4m3x2(a, b);
        out[i] = (unsigned char)(r & 0xFFu);
        if (i + 1 < n) out[i + 1] = (unsigned char)(r >> 8);
    }
}
