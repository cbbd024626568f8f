// The epoch loop (see train_loop.hpp).
#include "train/train_loop.hpp"

#include <signal.h>    // SIGINT, SIGTERM, SIGUSR1
#include <sys/stat.h>  // mkdir

#include <algorithm>  // std::max
#include <chrono>   // std::chrono::steady_clock
#include <cmath>    // std::isfinite
#include <cstdio>   // std::snprintf
#include <map>      // std::map
#include <memory>   // std::unique_ptr
#include <string>   // std::string

#include "train/gradient_dump.hpp"  // write_gradient_dump
#include "train/metrics_log.hpp"    // MetricsLog
#include "train/tensorboard_log.hpp"  // TensorBoardLog
#include "util/error.hpp"           // UserError, SystemError

namespace trainer::train {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}
}  // namespace

TrainLoop::TrainLoop(StepRunner& runner, model::PoseModel& model, Optimizer& optimizer, BatchSource& train,
                     BatchSource* val, LoopConfig config, DistributedHooks hooks, Log log, compute::Stream& stream)
    : runner_(runner),
      model_(model),
      optimizer_(optimizer),
      train_(train),
      val_(val),
      config_(std::move(config)),
      hooks_(hooks),
      log_(log),
      stream_(stream) {
  if (hooks_.gradients == nullptr) hooks_.gradients = &local_sync_;
  if (hooks_.metrics == nullptr) hooks_.metrics = &local_metrics_;
}

std::string TrainLoop::checkpoint_path(const std::string& which) const {
  return config_.out_dir + "/checkpoints/" + which + ".h5";
}

void TrainLoop::save(const std::vector<std::string>& which, const TrainingState& state, bool with_optimizer) {
  if (!log_.is_root()) return;
  if (!writer_) {
    ::mkdir((config_.out_dir + "/checkpoints").c_str(), 0775);
    writer_ = std::make_unique<CheckpointWriter>(model_.store());
  }
  TrainingState saved = state;
  const LossScalerState scaler = runner_.loss_scaler().state();
  saved.loss_scale = scaler.scale;
  saved.loss_scale_growth_tracker = scaler.growth_tracker;
  std::vector<std::string> paths;
  for (const auto& w : which) paths.push_back(checkpoint_path(w));
  auto snapshot = writer_->acquire(paths);
  // On the CPU the large copies are made by the writer's copier thread during the
  // next step's forward and backward; the update waits for them (train/update_fence.hpp).
  take_snapshot(*snapshot, model_.store(), with_optimizer ? &optimizer_ : nullptr, saved, stream_,
                SnapshotCopies::deferred_on_the_cpu);
  if (snapshot->deferred_done) optimizer_.wait_before_update(snapshot->deferred_done);
  writer_->submit(std::move(snapshot), std::move(paths));
}

int TrainLoop::agreed_stop_signal() {
  if (config_.stop_signals == nullptr) return 0;
  const int local = config_.stop_signals->signal_received();
  // Which signals any rank got; Ctrl-C wins over SIGTERM over SLURM's warning.
  double got[3] = {double(local == SIGINT), double(local == SIGTERM), double(local == SIGUSR1)};
  hooks_.metrics->sum(got, 3);
  return got[0] > 0 ? SIGINT : got[1] > 0 ? SIGTERM : got[2] > 0 ? SIGUSR1 : 0;
}

EvalSums TrainLoop::validate() {
  EvalSums sums;
  if (val_ != nullptr) {
    val_->start_epoch(0);  // validation order never changes
    while (const data::Batch* batch = val_->next()) sums.add(runner_.evaluate(*batch));
  }
  double v[5] = {sums.loss_weighted, sums.loss_count, sums.rmse_sum, sums.rmse_count, sums.rmse_input_sum};
  hooks_.metrics->sum(v, 5);  // every rank, every time
  return {v[0], v[1], v[2], v[3], v[4]};
}

bool TrainLoop::periodic_checkpoints_at_epoch_end() const {
  // Lightning's ModelCheckpoint._should_save_on_train_epoch_end: when validation may
  // skip epochs it saves after validations; with none, or once per epoch at its end,
  // at the epoch's end (val_check_interval == 1.0, which Python's int 1 also equals).
  if (config_.check_val_every_n_epoch != 1) return false;
  if (val_ == nullptr) return true;
  return !config_.val_check_interval.is_set() || config_.val_check_interval.value == 1;
}

long gradient_dump_step(const LoopConfig& config, long global_step) {
  const long dump_step = config.dump_gradients.empty()      ? -1
                         : config.dump_gradients_step > 0 ? config.dump_gradients_step
                                                          : global_step + 1;
  if (dump_step > 0 && dump_step <= global_step)
    throw UserError("cannot dump the gradients of step " + std::to_string(dump_step) + ": the run resumes after step " +
                        std::to_string(global_step),
                    "pick a later step, or leave --dump-gradients-step out for the first step of this run");
  if (dump_step > 0 && config.max_steps >= 0 && dump_step > config.max_steps)
    throw UserError("cannot dump the gradients of step " + std::to_string(dump_step) + ": the run stops after step " +
                        std::to_string(config.max_steps) + " (training.max_steps)",
                    "raise --max-steps or pick an earlier step");
  return dump_step;
}

TrainingState TrainLoop::run(TrainingState state) {
  const auto start = Clock::now();  // timing_.total: all of run(), the initial save included
  timing_ = Timing{};
  MetricsLog metrics(config_.out_dir + "/metrics.csv", state.global_step);
  // TensorBoard is a view of what metrics.csv also holds: a full disk or a lost
  // network mount there warns once and stops it, it never stops the training.
  std::unique_ptr<TensorBoardLog> tensorboard;
  std::function<void(int)> epoch_listener = config_.on_epoch_end;
  const auto to_tensorboard = [&](auto&& write) {
    if (!tensorboard) return;
    try {
      write(*tensorboard);
    } catch (const std::exception& e) {
      log_.warn(std::string("TensorBoard logging stops: ") + e.what());
      tensorboard.reset();
    }
  };
  const long per_epoch = train_.batches_per_epoch();
  const int accumulate = std::max(1, config_.accumulate_grad_batches);
  const long steps_per_epoch = (per_epoch + accumulate - 1) / accumulate;  // optimizer steps
  const long val_every = val_check_batches(config_.val_check_interval, per_epoch);  // may refuse: before any file
  const bool periodic_at_epoch_end = periodic_checkpoints_at_epoch_end();
  if (log_.is_root()) {
    try {
      tensorboard = std::make_unique<TensorBoardLog>(config_.out_dir, config_.tensorboard, state.global_step);
    } catch (const std::exception& e) {
      log_.warn(std::string("no TensorBoard logs: ") + e.what());
    }
  }
  if (config_.save_initial && state.global_step == 0) {
    save({"initial"}, state, true);
    log_.info("saved " + checkpoint_path("initial"));
  }
  long steps_this_run = 0;
  bool stop = config_.max_steps >= 0 && state.global_step >= config_.max_steps;
  const long dump_step = gradient_dump_step(config_, state.global_step);
  bool dumped = false;
  long last_saved_step = -1;
  int started_epoch = -1;  // the epoch whose batches the loader already prepares
  stopped_by_signal_ = 0;
  // Each epoch's overhead runs from the previous epoch's measurement, so that the
  // metrics row and TensorBoard writes after it are counted too (in the next epoch).
  Clock::time_point epoch_boundary = Clock::now();

  // One validation (every rank): its metrics, and the best loss and patience count of
  // early stopping (EarlyStopping(monitor=val loss, mode=min, min_delta=0)).
  struct Validation {
    double loss = 0, rmse = 0, rmse_input = 0, seconds = 0;
    bool improved = false;
  };
  // Why early stopping signalled the stop (empty: not yet), as Lightning's
  // EarlyStopping sets trainer.should_stop: at a validation whose loss is not finite
  // (check_finite, which does not count against the patience) or that leaves
  // early_stop_patience checks without improvement. Like should_stop it stays set (a
  // later improvement does not clear it), and the run ends at that check or at the
  // first epoch end from min_epochs on. A resumed run signals again at its next check
  // (Lightning keeps the patience count in the checkpoint, not the flag).
  std::string stop_signal;
  bool warned_non_finite = false;
  const auto run_validation = [&](int epoch) {
    const auto val_start = Clock::now();
    const EvalSums v = validate();
    Validation out;
    out.seconds = seconds_since(val_start);
    out.loss = v.loss_count > 0 ? v.loss_weighted / v.loss_count : 0;
    out.rmse = v.rmse_count > 0 ? v.rmse_sum / v.rmse_count : 0;
    out.rmse_input = v.rmse_count > 0 ? v.rmse_input_sum / v.rmse_count : 0;
    const bool finite = std::isfinite(out.loss);
    if (!finite) {
      if (!warned_non_finite)
        log_.warn("the validation loss is " + std::string(std::isnan(out.loss) ? "NaN" : "infinite") +
                  " at epoch " + std::to_string(epoch) + ": training diverged" +
                  (config_.early_stopping ? " (early stopping ends the run from training.min_epochs on)" : "") +
                  "; a lower training.learning_rate may avoid it");
      warned_non_finite = true;
    } else if (out.loss < state.best_val_loss) {
      state.best_val_loss = out.loss;
      state.bad_checks = 0;
      out.improved = true;
    } else {
      ++state.bad_checks;
    }
    if (config_.early_stopping && stop_signal.empty()) {
      char why[160] = "";
      if (!finite)
        std::snprintf(why, sizeof why, "the validation loss is not finite (the best was %.6g)", state.best_val_loss);
      else if (state.bad_checks >= config_.early_stop_patience)
        std::snprintf(why, sizeof why, "no improvement of the validation loss in %d checks", state.bad_checks);
      stop_signal = why;
    }
    char line[256];
    std::snprintf(line, sizeof line, "epoch %d  step %ld  validation: loss %.6g  pixel error %.3f px  RMSE %.3f px%s",
                  epoch, state.global_step, out.loss, pixel_error_of_rmse(out.rmse), out.rmse,
                  out.improved ? "  (best)" : "");
    log_.info(line);
    return out;
  };
  const auto should_stop_early = [&](int epochs_done) {
    if (stop_signal.empty() || epochs_done < config_.min_epochs) return false;
    log_.info("early stopping: " + stop_signal);
    return true;
  };
  // Lightning's ModelCheckpoint(every_n_epochs=n, save_top_k=-1): its default name.
  const auto periodic_due = [&](int epoch) {
    return config_.checkpoint_every_n_epochs > 0 && (epoch + 1) % config_.checkpoint_every_n_epochs == 0;
  };
  const auto periodic_name = [&](int epoch) {
    return "epoch=" + std::to_string(epoch) + "-step=" + std::to_string(state.global_step);
  };

  for (int epoch = state.epochs_completed; epoch < config_.max_epochs && !stop; ++epoch) {
    const auto epoch_start = epoch_boundary;
    const EpochLr lr = lr_for_epoch(config_.lr, epoch);
    optimizer_.set_group(model::ParamGroup::head, lr.head, true);
    // In the optimizer while frozen too (lr 0), as lightning-pose's UnfreezeBackbone
    // keeps it: its Adam moments are warm when it unfreezes.
    optimizer_.set_group(model::ParamGroup::backbone, lr.backbone, true);
    if (epoch == config_.lr.unfreezing_epoch && epoch > 0)
      log_.info("epoch " + std::to_string(epoch) + ": unfreezing the backbone");
    // The epoch's learning rates, once: a run resumed inside the epoch logged them at its start.
    if (state.batches_into_epoch == 0)
      to_tensorboard([&](TensorBoardLog& tb) { tb.epoch_start(epoch, state.global_step, lr.head, lr.backbone); });

    if (started_epoch != epoch) {
      train_.start_epoch(epoch);
      if (config_.unlabeled) config_.unlabeled->start_epoch(epoch, state.batches_into_epoch);
    }
    const double importance = config_.unlabeled ? unsupervised_importance(config_.anneal, epoch) : 0.0;
    runner_.take_unsupervised_sums();
    runner_.take_loss_sum();  // start the epoch's sum at zero
    long batches = 0, images = 0;  // this run's batches of the epoch (the loss sum's count)
    long batch_index = 0;
    // A run stopped by a signal resumes in the middle of its epoch: the sampler's
    // order depends only on (seed, epoch), so skipping the batches it trained puts
    // every rank exactly where it stopped.
    double resumed_loss_sum = 0, resumed_steps = 0;
    std::map<std::string, double> resumed_unsupervised_sums;  // by term name (rank 0)
    if (state.batches_into_epoch > 0) {
      for (; batch_index < state.batches_into_epoch && train_.next() != nullptr; ++batch_index) {
      }
      if (log_.is_root()) {
        resumed_loss_sum = state.epoch_loss_sum, resumed_steps = double(state.epoch_steps);
        resumed_unsupervised_sums = state.epoch_unsupervised_sums;
      }
      state.batches_into_epoch = 0;
      state.epoch_unsupervised_sums.clear();
    }
    const bool validates = val_ != nullptr && config_.check_val_every_n_epoch > 0 &&
                           (epoch + 1) % config_.check_val_every_n_epoch == 0;
    Validation end_validation;
    bool validated_at_end = false, early_stopped = false;
    double val_seconds = 0;
    const auto steps_start = Clock::now();
    // A logged step's loss is read only after the next step is queued, so logging
    // never leaves the device idle. It is averaged over ranks (Lightning's
    // sync_dist), so every rank takes part, at the same steps.
    struct {
      bool waiting = false;
      StepMetrics metrics;
      std::string before_loss, after_loss;
    } pending;
    const auto log_pending = [&] {
      if (!pending.waiting) return;
      pending.waiting = false;
      // Lightning's sync_dist: the mean over ranks of each rank's value.
      const StepValues got = runner_.requested_values();
      std::vector<double> values = {got.loss, got.rmse};
      values.insert(values.end(), got.unsupervised.begin(), got.unsupervised.end());
      hooks_.metrics->sum(values.data(), values.size());
      for (double& v : values) v /= config_.world_size;
      pending.metrics.loss = values[0];
      pending.metrics.rmse = values[1];
      if (config_.unlabeled) {
        pending.metrics.unsupervised_importance = importance;
        pending.metrics.total_loss = values[0];
        const auto& terms = runner_.unsupervised_terms();
        for (std::size_t t = 0; t < terms.size() && t + 2 < values.size(); ++t) {
          pending.metrics.unsupervised.push_back({terms[t].name, values[t + 2], terms[t].weight});
          pending.metrics.total_loss += importance * terms[t].weight * values[t + 2];
        }
      }
      char text[32];
      std::snprintf(text, sizeof text, "%.6g", pending.metrics.loss);
      log_.info(pending.before_loss + "  loss " + text + "  " + pending.after_loss);
      if (!log_.is_root()) return;
      metrics.append(pending.metrics);
      to_tensorboard([&](TensorBoardLog& tb) { tb.step(pending.metrics); });
    };
    while (const data::Batch* batch = train_.next()) {
      const data::Batch* frames = config_.unlabeled ? &config_.unlabeled->next() : nullptr;
      // Lightning steps after every accumulate-th batch of the epoch and after its last.
      const bool steps_now = (batch_index + 1) % accumulate == 0 || batch_index + 1 == per_epoch;
      const bool logs_now = steps_now && config_.log_every_n_steps > 0 &&
                            (state.global_step + 1) % config_.log_every_n_steps == 0;
      if (logs_now) runner_.measure_next_step();  // train_supervised_rmse of the logged step
      runner_.train_step(*batch, optimizer_, *hooks_.gradients, true, hooks_.bn_sync, frames,
                         importance, MicroBatch{accumulate, steps_now});
      log_pending();
      ++batches;
      ++batch_index;
      images += batch->size;
      if (steps_now) {
        ++state.global_step;
        ++steps_this_run;
        if (state.global_step == dump_step) {
          // The optimizer leaves the gradient buffer as it read it, so the dump can follow the step.
          if (log_.is_root()) {
            write_gradient_dump(config_.dump_gradients, model_.store(), true, state.global_step,
                                config_.world_size, stream_);
            log_.info("wrote the gradients of step " + std::to_string(state.global_step) + " to " +
                      config_.dump_gradients);
          }
          dumped = true;
        }
        if (config_.log_every_n_steps > 0 && state.global_step % config_.log_every_n_steps == 0) {
          runner_.request_loss();
          const double elapsed = seconds_since(start);
          long total = long(config_.max_epochs) * steps_per_epoch;
          if (config_.max_steps >= 0 && config_.max_steps < total) total = config_.max_steps;
          const double eta = elapsed / double(steps_this_run) * double(total - state.global_step);
          const double ips = double(images) * config_.world_size / seconds_since(steps_start);
          char before[96], after[128];
          std::snprintf(before, sizeof before, "epoch %d/%d  step %ld (%ld/%ld)", epoch, config_.max_epochs,
                        state.global_step, batch_index, per_epoch);
          std::snprintf(after, sizeof after, "lr %.3g/%.3g  %.1f img/s  ETA %s", lr.head, lr.backbone, ips,
                        format_duration(eta).c_str());
          pending.before_loss = before;
          pending.after_loss = after;
          pending.metrics = StepMetrics{};
          pending.metrics.epoch = epoch;
          pending.metrics.step = state.global_step;
          pending.metrics.lr_head = lr.head;
          pending.metrics.lr_backbone = lr.backbone;
          pending.metrics.images_per_s = ips;
          pending.metrics.elapsed_s = elapsed;
          pending.waiting = true;
        }
      }
      if (validates && batch_index % val_every == 0) {
        if (batch_index == per_epoch) {  // the epoch's end: runs below, and its row holds it
          validated_at_end = true;
        } else {  // training.val_check_interval: inside the epoch
          log_pending();
          const Validation v = run_validation(epoch);
          val_seconds += v.seconds;
          const ValidationMetrics row{epoch, state.global_step, v.loss, v.rmse, v.rmse_input};
          if (log_.is_root()) metrics.append(row);
          to_tensorboard([&](TensorBoardLog& tb) { tb.validation(row); });
          std::vector<std::string> which;
          if (v.improved) which.push_back("best");
          if (!periodic_at_epoch_end && periodic_due(epoch)) which.push_back(periodic_name(epoch));
          if (!which.empty()) {
            // The position inside the epoch, for a resume from one of these files (its
            // epoch mean of the training loss then counts the batches after it only).
            TrainingState here = state;
            here.batches_into_epoch = batch_index;
            here.epoch_loss_sum = 0, here.epoch_steps = 0;
            here.epoch_unsupervised_sums.clear();
            save(which, here, !config_.save_weights_only);
          }
          if (should_stop_early(epoch)) {
            early_stopped = stop = true;
            break;
          }
        }
      }
      if (!steps_now) continue;  // signals and max_steps stop at an optimizer step
      if (config_.max_steps >= 0 && state.global_step >= config_.max_steps) {
        stop = true;
        break;
      }
      if ((stopped_by_signal_ = agreed_stop_signal()) != 0) {
        stop = true;
        break;
      }
    }
    log_pending();
    // Early stopping inside the epoch ends it there, as Lightning's does.
    const bool epoch_done = batch_index == per_epoch || early_stopped;
    // Prepare the next epoch's first batches while this one validates and checkpoints.
    if (epoch_done && !stop && epoch + 1 < config_.max_epochs) {
      train_.start_epoch(epoch + 1);
      if (config_.unlabeled) config_.unlabeled->start_epoch(epoch + 1, 0);
      started_epoch = epoch + 1;
    }
    const double loss_sum = runner_.take_loss_sum().first;  // waits for the epoch's last step
    if (validated_at_end) end_validation = run_validation(epoch);
    std::vector<double> unsupervised_sums = runner_.take_unsupervised_sums();  // this run's steps only
    const auto& unsupervised_terms = runner_.unsupervised_terms();
    const double steps_seconds = seconds_since(steps_start) - val_seconds - end_validation.seconds;
    state.epochs_completed = epoch_done ? epoch + 1 : epoch;

    // Average the epoch's training loss over ranks (sum of losses and of batches); the
    // same collective tells every rank whether rank 0's last checkpoint write failed.
    const bool write_failed = writer_ && writer_->failed();
    double train_sums[3] = {loss_sum + resumed_loss_sum, double(batches) + resumed_steps, write_failed ? 1. : 0.};
    hooks_.metrics->sum(train_sums, 3);
    if (train_sums[2] > 0) {
      if (writer_) writer_->check();  // rank 0 throws the cause
      throw SystemError("rank 0 could not write a checkpoint (its error says why); training stops");
    }
    if (config_.unlabeled) {
      // Each term's sum over ranks and over the epoch's steps, those before a resume included.
      for (std::size_t t = 0; t < unsupervised_terms.size() && t < unsupervised_sums.size(); ++t) {
        const auto resumed = resumed_unsupervised_sums.find(unsupervised_terms[t].name);
        if (resumed != resumed_unsupervised_sums.end()) unsupervised_sums[t] += resumed->second;
      }
      hooks_.metrics->sum(unsupervised_sums.data(), unsupervised_sums.size());
    }

    timing_.steps += steps_seconds;
    timing_.validation += val_seconds + (validated_at_end ? end_validation.seconds : 0);
    if (!epoch_done) {
      // Stopped in the middle of the epoch (a signal or max_steps): the exact position
      // goes into last.h5, with the optimizer, so that --resume continues bit for bit.
      state.batches_into_epoch = batch_index;
      state.epoch_loss_sum = train_sums[0];
      state.epoch_steps = long(train_sums[1]);
      for (std::size_t t = 0; t < unsupervised_terms.size() && t < unsupervised_sums.size(); ++t)
        state.epoch_unsupervised_sums[unsupervised_terms[t].name] = unsupervised_sums[t];
      save({"last"}, state, true);
      state.epoch_unsupervised_sums.clear();
      last_saved_step = state.global_step;
      state.batches_into_epoch = 0;
      if (log_.is_root()) metrics.flush();  // the step rows so far; the resumed run keeps them
      break;
    }

    EpochMetrics row;
    row.epoch = epoch;
    row.step = state.global_step;
    row.train_loss = train_sums[1] > 0 ? train_sums[0] / train_sums[1] : 0;
    row.lr_head = lr.head;
    row.lr_backbone = lr.backbone;
    row.images_per_s = steps_seconds > 0 ? double(images) * config_.world_size / steps_seconds : 0;
    if (config_.unlabeled) {
      // Each term's mean over ranks and over the epoch's batches (train_sums[1] counts
      // the batches of every rank, a resumed run's earlier ones included).
      row.unsupervised_importance = importance;
      for (std::size_t t = 0; t < unsupervised_terms.size() && t < unsupervised_sums.size(); ++t)
        row.unsupervised.push_back({unsupervised_terms[t].name,
                                    train_sums[1] > 0 ? unsupervised_sums[t] / train_sums[1] : 0,
                                    unsupervised_terms[t].weight});
    }

    bool improved = false;
    if (validated_at_end) {
      val_seconds += end_validation.seconds;
      row.val_loss = end_validation.loss;
      row.val_rmse = end_validation.rmse;
      row.val_rmse_input = end_validation.rmse_input;
      improved = end_validation.improved;
    }
    // At this epoch's validation, or a signal from an earlier one now that min_epochs
    // allows it (not again after a stop inside the epoch).
    if (!stop && should_stop_early(epoch + 1)) stop = true;
    // Checkpoint cadence (Lightning's ModelCheckpoint): best.h5 when validation
    // improves (every epoch without a validation set), last.h5 every
    // checkpoint_every_n_epochs (default: at each validation) and at the end, and the
    // periodic epoch=E-step=S.h5 at the epoch's end or its validation there.
    const int every = config_.checkpoint_every_n_epochs > 0 ? config_.checkpoint_every_n_epochs
                                                            : std::max(config_.check_val_every_n_epoch, 1);
    const bool at_end = stop || epoch + 1 >= config_.max_epochs;
    std::vector<std::string> which;
    if ((epoch + 1) % every == 0 || at_end) which.push_back("last");
    if (improved || val_ == nullptr) which.push_back("best");
    if (periodic_due(epoch) && (periodic_at_epoch_end || validated_at_end)) which.push_back(periodic_name(epoch));
    if (!which.empty()) {
      save(which, state, !config_.save_weights_only);
      if (which.front() == "last") last_saved_step = state.global_step;
    }
    row.elapsed_s = seconds_since(start);
    row.steps_s = steps_seconds;
    row.val_s = val_seconds;
    epoch_boundary = Clock::now();
    row.overhead_s = std::chrono::duration<double>(epoch_boundary - epoch_start).count() - steps_seconds - val_seconds;
    if (log_.is_root()) metrics.append(row);
    to_tensorboard([&](TensorBoardLog& tb) { tb.epoch_end(row); });
    if (log_.is_root() && epoch_listener) {
      try {
        epoch_listener(state.epochs_completed);
      } catch (const std::exception& e) {
        log_.warn(std::string("progress file updates stop: ") + e.what());
        epoch_listener = nullptr;
      }
    }
  }
  if (last_saved_step != state.global_step && (steps_this_run > 0 || !config_.save_initial))
    save({"last"}, state, !config_.save_weights_only);
  if (log_.is_root()) metrics.flush();  // the files are complete before train returns
  if (writer_) writer_->wait();
  // No rank leaves before rank 0's checkpoint is on disk: a launcher that sees one
  // rank exit (with 130 after Ctrl-C, say) may kill the others.
  double written = 0;
  hooks_.metrics->sum(&written, 1);
  if (dump_step > 0 && !dumped)
    log_.warn("training ended after step " + std::to_string(state.global_step) + ", before step " +
              std::to_string(dump_step) + ": no gradients written to " + config_.dump_gradients);
  timing_.total = seconds_since(start);
  return state;
}

}  // namespace trainer::train
