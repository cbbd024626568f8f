# The run folder is a lightning-pose model directory (src/app/lp_model_dir.hpp):
# config.yaml, train_status.json and tb_logs/<model_name>/version_0/checkpoints/
# epoch=E-step=S-best.ckpt. PyTorch loads the .ckpt (torch.load), finds it the way
# lightning-pose's ckpt_path_from_base_path does, and loads its state_dict with
# strict=True into lightning-pose's module layout (torchvision's ResNet children in an
# nn.Sequential, then head.upsampling_layers = PixelShuffle + ConvTranspose2d), whose
# heatmaps equal those of the same network loaded from best.h5
# (scripts/checkpoint_to_torch.py, which the model parity tests tie to the trainer).
# And back: --init-weights takes the .ckpt (lightning-pose's names read as ours), and
# `trainer predict LP_MODEL_DIR VIDEO` opens a directory holding only config.yaml and
# tb_logs/ (the .ckpt re-saved by torch.save) and predicts what the run predicts.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, torchvision, h5py, yaml" 2>/dev/null || skip "torch, torchvision, h5py or yaml missing for $PY"
cd "$SCRATCH"
"$TRAINER" synth --out s.h5 --frames 24 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
cat >s.cfg <<CFG
[data]
data_files = $SCRATCH/s.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = none
train_batch_size = 4
val_batch_size = 4
max_epochs = 2
check_val_every_n_epoch = 1
unfreezing_epoch = 0
num_workers = 1
[model]
backbone = resnet18
model_name = lp_dir_test
CFG
"$TRAINER" train --config s.cfg --out run >train.log 2>&1 || { cat train.log; fail "train"; }
[[ -s run/config.yaml ]] || fail "no config.yaml"
[[ -s run/train_status.json ]] || fail "no train_status.json"
ckpts=(run/tb_logs/lp_dir_test/version_0/checkpoints/*-best.ckpt)
[[ ${#ckpts[@]} == 1 && -s ${ckpts[0]} ]] || { ls -R run/tb_logs; fail "not exactly one *-best.ckpt"; }

$PY - run "$REPO/scripts" <<'PY' || fail "the lightning-pose model directory does not load as lightning-pose loads it"
import glob, json, os, re, sys
from collections import OrderedDict
import torch, torchvision, yaml
from torch import nn
run, scripts = sys.argv[1], sys.argv[2]
sys.path.insert(0, scripts)
from checkpoint_to_torch import load_checkpoint

status = json.load(open(f"{run}/train_status.json"))
assert status["status"] == "COMPLETED", status
assert status["progress"]["completed"] == status["progress"]["total"] == 2, status
cfg = yaml.safe_load(open(f"{run}/config.yaml"))
assert cfg["model"]["model_name"] == "lp_dir_test" and cfg["model"]["backbone"] == "resnet18", cfg["model"]
assert cfg["data"]["num_keypoints"] == 3 and len(cfg["data"]["keypoint_names"]) == 3, cfg["data"]

# lightning_pose.utils.io.ckpt_path_from_base_path: tb_logs/<model_name>/version_*/checkpoints/*.ckpt
found = glob.glob(os.path.join(run, "tb_logs", cfg["model"]["model_name"], "version_*", "checkpoints", "*.ckpt"))
assert len(found) == 1 and found[0].endswith("-best.ckpt"), found
assert re.search(r"epoch=\d+-step=\d+-best\.ckpt$", found[0]), found[0]
ckpt = torch.load(found[0])
for key in ("epoch", "global_step", "pytorch-lightning_version", "state_dict", "hyper_parameters"):
    assert key in ckpt, key
hp = ckpt["hyper_parameters"]
assert hp["backbone"] == "resnet18" and hp["num_keypoints"] == 3 and hp["downsample_factor"] == 2, hp
assert hp["pretrained"] is False and hp["lr_scheduler"] == "multisteplr", hp
step = int(re.search(r"step=(\d+)", found[0]).group(1))
assert ckpt["global_step"] == step, (ckpt["global_step"], step)

class LightningPoseHeatmap(nn.Module):
    """lightning-pose 2.4's HeatmapTracker layout: backbones/factory.py grab_layers_sequential
    (children up to layer4) and heads/heatmap.py make_upsampling_layers."""
    def __init__(self, keypoints, downsample):
        super().__init__()
        base = torchvision.models.resnet18()
        self.backbone = nn.Sequential(*list(base.children())[:-2])
        head = nn.Module()
        layers = [nn.PixelShuffle(2)]
        n = 5 - downsample - 1
        for i in range(n):
            layers.append(nn.ConvTranspose2d(512 // 4 if i == 0 else keypoints, keypoints, kernel_size=(3, 3),
                                             stride=(2, 2), padding=(1, 1), output_padding=(1, 1)))
        head.upsampling_layers = nn.Sequential(*layers)
        self.head = head
    def forward(self, x):
        x = self.head.upsampling_layers(self.backbone(x))
        n, k, h, w = x.shape
        return torch.softmax(x.reshape(n, k, h * w), dim=-1).reshape(n, k, h, w)

lp = LightningPoseHeatmap(3, 2)
lp.load_state_dict(ckpt["state_dict"], strict=True)
lp.eval()
ours = load_checkpoint(f"{run}/checkpoints/best.h5")
images = torch.randn(4, 3, 64, 64, generator=torch.Generator().manual_seed(5))
with torch.no_grad():
    a, b = lp(images), ours(images)
diff = (a - b).abs().max().item()
assert diff == 0.0, diff
print(f"{found[0]}: {len(ckpt['state_dict'])} tensors load strictly into lightning-pose's layout; "
      f"heatmaps equal best.h5's (max |diff| {diff})")
PY

# The other direction: a lightning-pose .ckpt as --init-weights (its backbone tensors).
"$TRAINER" train --config s.cfg --out run_init --init-weights "${ckpts[0]}" --training.max_epochs 1 >init.log 2>&1 ||
  { cat init.log; fail "train --init-weights LP.ckpt"; }
grep -q "backbone: loaded 120 tensors from .*-best.ckpt (PyTorch (torch.save); 4 tensors of other layers ignored)" init.log ||
  { cat init.log; fail "--init-weights did not load the .ckpt's 120 backbone tensors"; }

# A lightning-pose model directory opened here: config.yaml and tb_logs/ only, its
# .ckpt re-saved by torch.save itself (memo opcodes and all, as lightning-pose's are
# written). `trainer predict LP_DIR VIDEO` predicts as the trainer's own run does.
TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"
"$TOOL" write clip.mp4 12 64 64 || fail "video_tool write"
mkdir -p lpdir/tb_logs/lp_dir_test/version_0/checkpoints && cp run/config.yaml lpdir/
$PY -c "
import sys, torch
c = torch.load(sys.argv[1]); c['state_dict']['rmse_loss.dummy'] = torch.zeros(1)  # a key the trainer does not know
torch.save(c, sys.argv[2])" "${ckpts[0]}" "lpdir/tb_logs/lp_dir_test/version_0/checkpoints/$(basename "${ckpts[0]}")" ||
  fail "torch.save of the checkpoint"
"$TRAINER" predict lpdir clip.mp4 >lp_predict.log 2>&1 || { cat lp_predict.log; fail "predict LP_MODEL_DIR VIDEO"; }
"$TRAINER" predict run clip.mp4 >run_predict.log 2>&1 || { cat run_predict.log; fail "predict RUN_DIR VIDEO"; }
cmp <(tail -n +4 lpdir/video_preds/clip.csv) <(tail -n +4 run/video_preds/clip.csv) ||
  fail "predictions from the lightning-pose model directory differ from the run's"
ls lpdir/tb_logs/lp_dir_test/version_0/checkpoints/*.ckpt.trainer.h5 >/dev/null || fail "no converted checkpoint kept"
# lightning-pose saves config.yaml unresolved: its example's data folders stay
# ${LP_ROOT_PATH:}/data/..., a resolver of its installation, with the unsupervised losses
# that read data.video_dir. Videos are predicted without them (and without the PCA
# error files, which need the labels); --init-weights reads the folder too; a label CSV
# needs data.data_dir, and the error says how to give it.
mkdir -p lproot && cp -r lpdir/tb_logs lproot/ && rm -f lproot/tb_logs/lp_dir_test/version_0/checkpoints/*.trainer.h5
$PY - run/config.yaml lproot/config.yaml <<'PY' || fail "writing lightning-pose's unresolved config.yaml"
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["data"].pop("data_files", None)
c["data"].update(data_dir="${LP_ROOT_PATH:}/data/mirror-mouse-example", video_dir="${data.data_dir}/videos",
                 csv_file="CollectedData.csv", columns_for_singleview_pca=[0, 1, 2])
c["model"]["losses_to_use"] = ["pca_singleview"]
yaml.safe_dump(c, open(sys.argv[2], "w"))
PY
"$TRAINER" predict lproot clip.mp4 >lproot_predict.log 2>&1 || { cat lproot_predict.log; fail "predict LP_DIR VIDEO with \${LP_ROOT_PATH:}"; }
grep -q "no PCA error files" lproot_predict.log || { cat lproot_predict.log; fail "no note on the PCA error files"; }
cmp <(tail -n +4 lproot/video_preds/clip.csv) <(tail -n +4 run/video_preds/clip.csv) ||
  fail "predictions from the unresolved config.yaml's folder differ from the run's"
"$TRAINER" train --config s.cfg --out run_root_init --init-weights lproot --training.max_epochs 1 >root_init.log 2>&1 ||
  { cat root_init.log; fail "train --init-weights LP_DIR with \${LP_ROOT_PATH:}"; }
: >labels.csv
expect_fail 2 "data.data_dir uses the resolver ..LP_ROOT_PATH:" "$TRAINER" predict lproot labels.csv
grep -q "^hint: .*--overrides data.data_dir=" "$SCRATCH/err.txt" || fail "the hint does not say how to give data.data_dir"
# With data.data_dir given, the CSV's frames are predicted into the model folder's
# image_preds/, and the CSV's import is cached beside the model folder, as a run's is
# (not inside its tb_logs/).
"$TRAINER" synth --out e.h5 --frames 6 --size 64 --keypoints 3 --seed 2 --export-dir proj >/dev/null || fail "synth export"
"$TRAINER" predict lproot proj/CollectedData.csv --overrides "data.data_dir=$SCRATCH/proj" >csv_predict.log 2>&1 ||
  { cat csv_predict.log; fail "predict LP_DIR CSV with data.data_dir"; }
[[ -s lproot/image_preds/CollectedData.csv/predictions.csv ]] || { cat csv_predict.log; fail "no image_preds in the model folder"; }
ls imported/CollectedData-*.h5 >/dev/null 2>&1 || { ls -R lproot | head -30; fail "the CSV's import is not cached beside the model folder"; }
! find lproot -name imported | grep -q . || fail "an import cache inside the lightning-pose model folder"
# --init-weights takes the folders too: the model directory's .ckpt, a run's best.h5.
"$TRAINER" train --config s.cfg --out run_dir_init --init-weights lpdir --training.max_epochs 1 >dir_init.log 2>&1 ||
  { cat dir_init.log; fail "train --init-weights LP_MODEL_DIR"; }
grep -q "backbone: loaded 120 tensors from lpdir/tb_logs/lp_dir_test/version_0/checkpoints/.*-best.ckpt" dir_init.log ||
  { cat dir_init.log; fail "--init-weights LP_MODEL_DIR did not load its .ckpt"; }
"$TRAINER" train --config s.cfg --out run_dir_init2 --init-weights run --training.max_epochs 1 >run_init.log 2>&1 ||
  { cat run_init.log; fail "train --init-weights RUN_DIR"; }
grep -q "backbone: loaded .* tensors from run/checkpoints/best.h5" run_init.log ||
  { cat run_init.log; fail "--init-weights RUN_DIR did not load best.h5"; }
# lightning-pose's model.checkpoint: the run folder's .ckpt (found as in a model
# directory) starts a run with every tensor, head included: its initial weights predict
# what the run's best.h5 predicts.
"$TRAINER" train --config s.cfg --out run_ckpt --model.checkpoint run --max-steps 0 --save-initial >ckpt.log 2>&1 ||
  { cat ckpt.log; fail "train --model.checkpoint RUN_DIR"; }
grep -q "model.checkpoint: loaded 124 tensors from .*run/tb_logs/lp_dir_test/version_0/checkpoints/.*-best.ckpt" \
  ckpt.log || { cat ckpt.log; fail "model.checkpoint did not load the .ckpt's 124 tensors"; }
"$TRAINER" predict --checkpoint run_ckpt/checkpoints/initial.h5 --video clip.mp4 --video-out ckpt_preds \
  >ckpt_predict.log 2>&1 || { cat ckpt_predict.log; fail "predict with the model.checkpoint's initial weights"; }
cmp <(tail -n +4 ckpt_preds/clip.csv) <(tail -n +4 run/video_preds/clip.csv) ||
  fail "a run started from model.checkpoint does not start from the .ckpt's weights"
sed -i 's/model_name: lp_dir_test/model_name: other/' lpdir/config.yaml
expect_fail 2 "has no checkpoint" "$TRAINER" predict lpdir clip.mp4

# Trained again into the same folder: a new version, one best checkpoint in it.
"$TRAINER" train --config s.cfg --out run --training.max_epochs 1 >train2.log 2>&1 || { cat train2.log; fail "train again"; }
ls run/tb_logs/lp_dir_test/version_1/checkpoints/*-best.ckpt >/dev/null 2>&1 || { ls -R run/tb_logs; fail "no version_1 checkpoint"; }
echo "PASSED"
