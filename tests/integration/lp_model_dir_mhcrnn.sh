# The context model (heatmap_mhcrnn) in the lightning-pose model directory: the run's
# tb_logs/.../*-best.ckpt holds lightning-pose's HeatmapTrackerMHCRNN state_dict (the
# ResNet's children as an nn.Sequential, head.head_sf.upsampling_layers, head.head_mf's
# UpsamplingCRNN modules and their `layers` ModuleList aliases), which PyTorch loads
# with strict=True into that layout (UpsamplingCRNN as tests/parity/mhcrnn_parity.py
# re-implements it); then a directory holding only config.yaml and the .ckpt (re-saved
# by torch.save) predicts, with `trainer predict LP_MODEL_DIR VIDEO`, what the run
# predicts, and --init-weights takes the .ckpt's backbone.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, torchvision, yaml" 2>/dev/null || skip "torch, torchvision or yaml missing for $PY"
cd "$SCRATCH"
"$TRAINER" synth --out v.h5 --frames 24 --size 64 --keypoints 3 --videos 2 --seed 1 >/dev/null || fail "synth"
cat >v.cfg <<CFG
[data]
data_files = $SCRATCH/v.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = none
train_batch_size = 4
val_batch_size = 4
max_epochs = 1
train_prob = 0.8
val_prob = 0.2
check_val_every_n_epoch = 1
unfreezing_epoch = 0
num_workers = 1
[model]
backbone = resnet18
model_type = heatmap_mhcrnn
model_name = ctx
CFG
"$TRAINER" train --config v.cfg --out run >train.log 2>&1 || { cat train.log; fail "train heatmap_mhcrnn"; }
ckpts=(run/tb_logs/ctx/version_0/checkpoints/*-best.ckpt)
[[ ${#ckpts[@]} == 1 && -s ${ckpts[0]} ]] || { cat train.log; ls -R run/tb_logs; fail "not exactly one *-best.ckpt"; }

$PY - "${ckpts[0]}" "$REPO/tests/parity" <<'PY' || fail "the .ckpt does not load into lightning-pose's HeatmapTrackerMHCRNN layout"
import sys
import torch, torchvision
from torch import nn
sys.path.insert(0, sys.argv[2])
from mhcrnn_parity import CRNN

class UpsamplingCRNN(CRNN):
    """lightning-pose's UpsamplingCRNN also keeps its modules in `layers` (heads/heatmap_mhcrnn.py)."""
    def __init__(self, in_channels, k):
        super().__init__(in_channels, k)
        self.layers = nn.ModuleList([self.W_pre, self.W_f, self.H_f, self.W_b, self.H_b])

class HeatmapTrackerMHCRNN(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.backbone = nn.Sequential(*list(torchvision.models.resnet18().children())[:-2])
        self.head = nn.Module()
        self.head.head_sf = nn.Module()
        self.head.head_sf.upsampling_layers = nn.Sequential(
            nn.PixelShuffle(2),
            nn.ConvTranspose2d(512 // 4, k, 3, stride=2, padding=1, output_padding=1),
            nn.ConvTranspose2d(k, k, 3, stride=2, padding=1, output_padding=1))
        self.head.head_mf = UpsamplingCRNN(512, k)

ckpt = torch.load(sys.argv[1])
hp = ckpt["hyper_parameters"]
assert hp["model_type"] == "heatmap_mhcrnn" and hp["num_keypoints"] == 3 and hp["backbone"] == "resnet18", hp
state = ckpt["state_dict"]
m = HeatmapTrackerMHCRNN(3)
m.load_state_dict(state, strict=True)
assert torch.equal(state["head.head_mf.layers.0.weight"], state["head.head_mf.W_pre.weight"])
assert torch.equal(state["head.head_mf.layers.4.1.bias"], state["head.head_mf.H_b.1.bias"])
print(f"{sys.argv[1]}: {len(state)} tensors load strictly into lightning-pose's HeatmapTrackerMHCRNN layout")
PY

TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"
"$TOOL" write clip.mp4 12 64 64 || fail "video_tool write"
mkdir -p lpdir/tb_logs/ctx/version_0/checkpoints && cp run/config.yaml lpdir/
$PY -c "import sys, torch; torch.save(torch.load(sys.argv[1]), sys.argv[2])" "${ckpts[0]}" \
  "lpdir/tb_logs/ctx/version_0/checkpoints/$(basename "${ckpts[0]}")" || fail "torch.save of the checkpoint"
"$TRAINER" predict lpdir clip.mp4 >lp_predict.log 2>&1 || { cat lp_predict.log; fail "predict LP_MODEL_DIR VIDEO"; }
"$TRAINER" predict run clip.mp4 >run_predict.log 2>&1 || { cat run_predict.log; fail "predict RUN_DIR VIDEO"; }
cmp <(tail -n +4 lpdir/video_preds/clip.csv) <(tail -n +4 run/video_preds/clip.csv) ||
  fail "predictions from the lightning-pose model directory differ from the run's"
"$TRAINER" train --config v.cfg --out run_init --init-weights lpdir --max-steps 1 >init.log 2>&1 ||
  { cat init.log; fail "train --init-weights LP_MODEL_DIR (heatmap_mhcrnn)"; }
grep -q "backbone: loaded 120 tensors from lpdir/tb_logs/ctx/version_0/checkpoints/.*-best.ckpt" init.log ||
  { cat init.log; fail "--init-weights did not load the .ckpt's 120 backbone tensors"; }
echo "PASSED"
