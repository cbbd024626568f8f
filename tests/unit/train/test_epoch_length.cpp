// lightning-pose's steps per epoch (train.py calculate_steps_per_epoch at f54c477 with
// Lightning's limit_train_batches and max_size_cycle): supervised epochs are one pass
// of the labelled rows, semi-supervised ones at least 10 steps, capped by the longer of
// the labelled and video loaders.
#include <catch2/catch.hpp>

#include <stdexcept>  // std::invalid_argument

#include "train/batch_limit.hpp"
#include "train/epoch_length.hpp"
#include "util/error.hpp"

using namespace trainer::train;

namespace {
EpochLengthInputs inputs(std::int64_t frames, int batch, long labeled, bool semi, long unlabeled = 1000) {
  EpochLengthInputs in;
  in.train_frames = frames;
  in.batch_per_rank = batch;
  in.labeled_batches = labeled;
  in.semi_supervised = semi;
  in.unlabeled_batches = semi ? unlabeled : 0;
  return in;
}
}  // namespace

TEST_CASE("epoch length: supervised is one pass of the labelled rows", "[train][epoch_length]") {
  CHECK(steps_per_epoch(inputs(72, 16, 5, false)) == 5);
  // Two ranks, 8 each: ceil(72 / 8) = 9 is only the limit; a rank's pass is 5 batches.
  CHECK(steps_per_epoch(inputs(72, 8, 5, false)) == 5);
  CHECK(steps_per_epoch(inputs(3, 16, 1, false)) == 1);
}

TEST_CASE("epoch length: semi-supervised takes max(10, ceil(N / b))", "[train][epoch_length]") {
  // The mirror-mouse example: 72 train frames, batch 16 -> ceil(72 / 16) = 5 -> 10.
  CHECK(steps_per_epoch(inputs(72, 16, 5, true)) == 10);
  // On two ranks (8 per rank): max(10, 9) = 10, each rank's 5 batches cycling.
  CHECK(steps_per_epoch(inputs(72, 8, 5, true)) == 10);
  // On four ranks (4 per rank): ceil(72 / 4) = 18 steps, about four passes per rank.
  CHECK(steps_per_epoch(inputs(72, 4, 5, true)) == 18);
  // Plenty of labels: ceil(N / b).
  CHECK(steps_per_epoch(inputs(400, 16, 25, true)) == 25);
  CHECK(steps_per_epoch(inputs(401, 16, 26, true)) == 26);
}

TEST_CASE("epoch length: semi-supervised stops with the longer loader", "[train][epoch_length]") {
  // Lightning's epoch is min(limit_train_batches, len(CombinedLoader)); in max_size_cycle
  // the length is the longer loader's: a short video with few labels gives fewer than 10.
  CHECK(steps_per_epoch(inputs(72, 16, 5, true, 7)) == 7);
  CHECK(steps_per_epoch(inputs(72, 16, 5, true, 3)) == 5);
  CHECK(steps_per_epoch(inputs(72, 16, 5, true, 10)) == 10);
}

TEST_CASE("epoch length: limit_train_batches replaces lightning-pose's count", "[train][epoch_length]") {
  EpochLengthInputs in = inputs(72, 16, 5, true);
  in.limit_train_batches = BatchLimit::count(3);
  CHECK(steps_per_epoch(in) == 3);
  in.limit_train_batches = BatchLimit::count(40);
  CHECK(steps_per_epoch(in) == 40);
  in = inputs(72, 16, 5, false);
  in.limit_train_batches = BatchLimit::count(40);
  CHECK(steps_per_epoch(in) == 5);  // supervised: never past one pass (its loader's length)
}

TEST_CASE("epoch length: limit_train_batches 0 and 0.0 are lightning-pose's default", "[train][epoch_length]") {
  // train.py passes `limit_train_batches or steps_per_epoch`: a falsy value is its count.
  EpochLengthInputs in = inputs(72, 16, 5, true);
  in.limit_train_batches = BatchLimit::count(0);
  CHECK(steps_per_epoch(in) == 10);
  in.limit_train_batches = BatchLimit::fraction(0.0);
  CHECK(steps_per_epoch(in) == 10);
}

TEST_CASE("epoch length: a fraction of limit_train_batches takes that share of the loader", "[train][epoch_length]") {
  // Lightning: int(len(train loader) * fraction); semi-supervised that length is
  // max_size_cycle's, the longer loader, not lightning-pose's max(10, ...) count.
  EpochLengthInputs in = inputs(72, 16, 5, false);
  in.limit_train_batches = BatchLimit::fraction(0.5);
  CHECK(steps_per_epoch(in) == 2);  // int(5 * 0.5)
  in.limit_train_batches = BatchLimit::fraction(1.0);
  CHECK(steps_per_epoch(in) == 5);
  in = inputs(72, 16, 5, true, 40);
  in.limit_train_batches = BatchLimit::fraction(0.25);
  CHECK(steps_per_epoch(in) == 10);  // int(40 * 0.25)
  in.limit_train_batches = BatchLimit::fraction(1.0);
  CHECK(steps_per_epoch(in) == 40);
  // A share that leaves no batch is refused, as Lightning does.
  in = inputs(72, 16, 5, false);
  in.limit_train_batches = BatchLimit::fraction(0.1);
  CHECK_THROWS_AS(steps_per_epoch(in), trainer::UserError);
}

TEST_CASE("batch limits read as Lightning reads them: int a count, float a fraction", "[train][epoch_length]") {
  using Kind = BatchLimit::Kind;
  CHECK(parse_batch_limit("").kind == Kind::unset);
  CHECK(parse_batch_limit("null").kind == Kind::unset);
  CHECK(parse_batch_limit("1").kind == Kind::count);     // one batch
  CHECK(parse_batch_limit("1.0").kind == Kind::fraction);  // the whole epoch
  CHECK(parse_batch_limit("0.25").value == 0.25);
  const BatchLimit three = parse_batch_limit("3.0");     // a float above 1 with no fraction: a count
  CHECK(three.kind == Kind::count);
  CHECK(three.value == 3);
  CHECK_THROWS_AS(parse_batch_limit("1.5"), std::invalid_argument);
  CHECK_THROWS_AS(parse_batch_limit("-2"), std::invalid_argument);
  CHECK_THROWS_AS(parse_batch_limit("ten"), std::invalid_argument);
  for (const char* text : {"null", "3", "0.25", "1.0", "0.0"})
    CHECK(format_batch_limit(parse_batch_limit(text)) == text);
}

TEST_CASE("epoch length: lightning-pose's video loader length", "[train][epoch_length]") {
  // Single frames: ceil(T / F); context batches: floor(T / F) (data/video/dali.py num_iters).
  CHECK(lp_unlabeled_batches(1000, 32, false) == 32);
  CHECK(lp_unlabeled_batches(1024, 32, false) == 32);
  CHECK(lp_unlabeled_batches(1000, 16, true) == 62);
  CHECK(lp_unlabeled_batches(5, 16, true) == 0);
}
