#include "runtime/devices.hpp"

#include <algorithm>  // std::find
#include <cctype>     // std::isspace, std::isdigit
#include <set>        // std::set

#include "util/error.hpp"  // UserError

namespace trainer::runtime {
namespace {

const char* kDevicesHint =
    "devices takes a count (\"2\": the first two GPUs), a list of ids (\"[1, 3]\", \"1,3\") or -1 "
    "(all visible GPUs)";

std::string trim(const std::string& s) {
  std::size_t begin = 0, end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return s.substr(begin, end - begin);
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw UserError("devices=\"" + text + "\": " + why, kDevicesHint);
}

// A whole number, optionally negative; anything else is an error naming the input.
int parse_id(const std::string& token, const std::string& text) {
  const std::string t = trim(token);
  std::size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  if (i == t.size()) bad(text, "'" + t + "' is not a number");
  for (std::size_t j = i; j < t.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(t[j]))) bad(text, "'" + t + "' is not a number");
  }
  if (t.size() - i > 6) bad(text, "'" + t + "' is not a GPU count or id");
  return std::stoi(t);
}

}  // namespace

std::string format_ids(const std::vector<int>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

DeviceRequest parse_devices(const std::string& input) {
  DeviceRequest request;
  request.text = trim(input);
  const std::string& text = request.text;
  if (text.empty()) {
    // Empty means "not set"; blanks look like a value that was lost, not a choice.
    if (!input.empty()) bad(input, "is only blanks; leave devices empty or write -1 for all GPUs");
    return request;  // not set: all visible GPUs
  }

  std::string body = text;
  const bool bracketed = body.front() == '[' || body.back() == ']';
  if (bracketed) {
    if (body.front() != '[' || body.back() != ']') bad(text, "unbalanced brackets");
    body = trim(body.substr(1, body.size() - 2));
  }

  if (!bracketed && body.find(',') == std::string::npos) {
    const int value = parse_id(body, text);
    if (value == -1) return request;  // all visible GPUs
    if (value < 0) bad(text, "negative values other than -1 are not allowed");
    request.kind = DeviceRequest::Kind::count;
    request.count = value;
    return request;
  }

  // A list: "[1, 3]", "1, 3", "1,3", "3," (Lightning drops empty items).
  request.kind = DeviceRequest::Kind::list;
  std::set<int> seen;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = body.find(',', start);
    const std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty()) {
      const int id = parse_id(item, text);
      if (id < 0) bad(text, "GPU ids cannot be negative (" + item + "); -1 alone means all GPUs");
      if (!seen.insert(id).second) bad(text, "GPU " + std::to_string(id) + " is listed twice");
      request.ids.push_back(id);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return request;
}

std::vector<int> resolve_devices(const DeviceRequest& request, int visible_gpus,
                                 const std::string& cuda_visible_devices) {
  std::vector<int> visible;
  for (int i = 0; i < visible_gpus; ++i) visible.push_back(i);
  if (request.asks_for_none()) {
    throw UserError("devices=\"" + request.text + "\" selects no GPU, but the accelerator is gpu",
                    "ask for at least one GPU (devices=1, devices=-1 for all), or use accelerator=cpu");
  }
  std::vector<int> chosen;
  switch (request.kind) {
    case DeviceRequest::Kind::all: chosen = visible; break;
    case DeviceRequest::Kind::count:
      for (int i = 0; i < request.count; ++i) chosen.push_back(i);
      break;
    case DeviceRequest::Kind::list: chosen = request.ids; break;
  }
  for (int id : chosen) {
    if (id >= visible_gpus) {
      std::string hint = "GPU ids are relative to CUDA_VISIBLE_DEVICES";
      hint += cuda_visible_devices.empty() ? " (not set)" : " (=" + cuda_visible_devices + ")";
      hint += "; ask for at most " + std::to_string(visible_gpus) + " GPU(s), or request more (e.g. --gres=gpu:" +
              std::to_string(chosen.size()) + ")";
      throw UserError("devices=\"" + request.text + "\": you requested GPUs " + format_ids(chosen) +
                          " but this node has " + format_ids(visible),
                      hint);
    }
  }
  if (chosen.empty()) {
    throw UserError("no GPU is visible on this node, but the accelerator is gpu",
                    "check CUDA_VISIBLE_DEVICES and the job's --gres=gpu:N, or use accelerator=cpu");
  }
  return chosen;
}

int select_device(const DeviceRequest& request, int visible_gpus, int local_rank, int local_size,
                  const std::string& cuda_visible_devices, std::string* warning) {
  if (visible_gpus == 1 && local_size > 1) {
    // SLURM (--gpus-per-task=1, --gpu-bind) gave each task its own single GPU: use it.
    // A device list then describes the node, so only its size is checked.
    const int per_node = request.kind == DeviceRequest::Kind::all     ? local_size
                         : request.kind == DeviceRequest::Kind::count ? request.count
                                                                      : static_cast<int>(request.ids.size());
    if (per_node != local_size) {
      throw UserError("devices=\"" + request.text + "\" names " + std::to_string(per_node) +
                          " GPU(s) per node but " + std::to_string(local_size) +
                          " ranks share this node, each seeing one GPU",
                      "start one rank per GPU: --ntasks-per-node=" + std::to_string(per_node));
    }
    return 0;
  }
  const std::vector<int> devices = resolve_devices(request, visible_gpus, cuda_visible_devices);
  const int available = static_cast<int>(devices.size());
  if (local_size > available) {
    throw UserError(std::to_string(local_size) + " ranks run on this node but devices" +
                        (request.is_set() ? "=\"" + request.text + "\"" : " (all visible)") + " gives only " +
                        std::to_string(available) + " GPU(s) " + format_ids(devices) +
                        ": ranks would share a GPU",
                    "start one rank per GPU: --ntasks-per-node=" + std::to_string(available) +
                        " with srun, -np " + std::to_string(available) + " (per node) with mpirun");
  }
  if (local_size < available && warning != nullptr) {
    std::vector<int> idle(devices.begin() + local_size, devices.end());
    *warning = "only " + std::to_string(local_size) + " rank(s) on this node for " + std::to_string(available) +
               " GPUs: GPUs " + format_ids(idle) + " stay idle (hint: --ntasks-per-node=" +
               std::to_string(available) + ")";
  }
  return devices[static_cast<std::size_t>(local_rank)];
}

}  // namespace trainer::runtime
