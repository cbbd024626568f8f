#include "data/unlabeled_augment.hpp"

#include <algorithm>  // std::max
#include <cmath>      // std::cos, std::sin, std::sqrt

#include "data/rng.hpp"  // KeyedRng, RngPurpose

namespace trainer::data {

bool augments_unlabeled_frames(Augmentation imgaug) {
  return imgaug == Augmentation::kDlc || imgaug == Augmentation::kDlcTopDown;
}

UnlabeledAugment draw_unlabeled_augment(int dst_h, int dst_w, std::uint64_t seed, int epoch, long step) {
  KeyedRng rng(seed, static_cast<std::uint64_t>(RngPurpose::kUnlabeledAugment), static_cast<std::uint64_t>(epoch),
               static_cast<std::uint64_t>(step));
  const double angle = rng.uniform(-10.0, 10.0) * 3.141592653589793 / 180.0;
  const double kx = rng.uniform(0.8, 1.2), ky = rng.uniform(0.8, 1.2);
  const double contrast = rng.uniform(0.75, 1.25), brightness = rng.uniform(0.75, 1.25);
  UnlabeledAugment a;
  a.shot_noise = rng.uniform(0.0, 10.0);
  a.gain = static_cast<float>(brightness * contrast);
  a.offset = static_cast<float>(brightness * 0.5 * (1.0 - contrast));
  // G = T(c) S(kx, ky) R(angle) T(-c) in network pixels, on the resized frame.
  const double cx = dst_w / 2.0, cy = dst_h / 2.0, cs = std::cos(angle), sn = std::sin(angle);
  const double g00 = kx * cs, g01 = -kx * sn, g10 = ky * sn, g11 = ky * cs;
  const double g02 = cx - (g00 * cx + g01 * cy), g12 = cy - (g10 * cx + g11 * cy);
  double* m = a.on_resized.m;
  m[0] = g00;
  m[1] = g01;
  m[2] = g02;
  m[3] = g10;
  m[4] = g11;
  m[5] = g12;
  // unwarp = G^-1.
  const double det = g00 * g11 - g01 * g10;
  const double i00 = g11 / det, i01 = -g01 / det, i10 = -g10 / det, i11 = g00 / det;
  a.unwarp[0] = static_cast<float>(i00);
  a.unwarp[1] = static_cast<float>(i01);
  a.unwarp[2] = static_cast<float>(-(i00 * g02 + i01 * g12));
  a.unwarp[3] = static_cast<float>(i10);
  a.unwarp[4] = static_cast<float>(i11);
  a.unwarp[5] = static_cast<float>(-(i10 * g02 + i11 * g12));
  return a;
}

void apply_unlabeled_photometrics(const UnlabeledAugment& a, float* image, std::size_t n, std::uint64_t seed,
                                  int epoch, long step, long frame) {
  for (std::size_t i = 0; i < n; ++i) image[i] = a.gain * image[i] + a.offset;
  if (a.shot_noise <= 0.0) return;
  // A sum of four 16-bit uniforms, centred and scaled to unit variance: close enough
  // to normal for noise (Poisson(v / f) f has mean v and variance v f).
  constexpr float kCentre = 2.0f * 65535.0f;
  const float unit = static_cast<float>(1.0 / (65536.0 * std::sqrt(4.0 / 12.0)));
  const float factor = static_cast<float>(a.shot_noise);
  // (epoch, step) share one key word: both stay far below 2^32.
  KeyedRng rng(seed, static_cast<std::uint64_t>(RngPurpose::kUnlabeledNoise),
               (static_cast<std::uint64_t>(epoch) << 32) | static_cast<std::uint32_t>(step),
               static_cast<std::uint64_t>(frame));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng.next_u64();
    const float sum = static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
    const float v = image[i];
    image[i] = v + std::sqrt(std::max(v, 0.0f) * factor) * unit * (sum - kCentre);
  }
}

}  // namespace trainer::data
