# lightning-pose's evaluation after training (app/lp_evaluation.hpp): a run trained from
# a label CSV also leaves image_preds/<csv>/predictions*.csv (the run's own, copied),
# and for CollectedData_new.csv beside the training CSV image_preds/CollectedData_new.csv/
# predictions*.csv plus predictions_new.csv and predictions_pixel_error_new.csv in the
# run folder; a damaged _new CSV warns and the run still ends well, its .ckpt written.
source "$(dirname "$0")/lib/common.sh"
cd "$SCRATCH"
"$TRAINER" synth --out s.h5 --frames 20 --size 64 --keypoints 3 --seed 4 --export-dir proj >/dev/null ||
  fail "synth --export-dir"
{ head -n 3 proj/CollectedData.csv; tail -n 4 proj/CollectedData.csv; } >proj/CollectedData_new.csv
cat >c.cfg <<CFG
[data]
data_dir = $SCRATCH/proj
csv_file = CollectedData.csv
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = none
train_batch_size = 4
val_batch_size = 4
max_epochs = 1
unfreezing_epoch = 0
num_workers = 1
[model]
backbone = resnet18
CFG
"$TRAINER" train --config c.cfg --out run >train.log 2>&1 || { cat train.log; fail "train from a label CSV"; }
for f in image_preds/CollectedData.csv/predictions.csv image_preds/CollectedData.csv/predictions_pixel_error.csv \
         image_preds/CollectedData_new.csv/predictions.csv image_preds/CollectedData_new.csv/predictions_pixel_error.csv \
         predictions_new.csv predictions_pixel_error_new.csv; do
  [[ -s run/$f ]] || { ls -R run; fail "no run/$f"; }
done
cmp run/predictions.csv run/image_preds/CollectedData.csv/predictions.csv || fail "image_preds copy differs"
cmp run/predictions_new.csv run/image_preds/CollectedData_new.csv/predictions.csv || fail "predictions_new.csv differs"
[[ $(tail -n +4 run/predictions_new.csv | wc -l) == 4 ]] || fail "predictions_new.csv does not hold the 4 new frames"
head -n 1 run/predictions_new.csv | grep -q ",set$" && fail "the new CSV's predictions have a set column"

# A damaged _new CSV: a warning, and the run's outputs and .ckpt all there.
echo "not,a,label,file" >proj/CollectedData_new.csv
"$TRAINER" train --config c.cfg --out run2 >train2.log 2>&1 || { cat train2.log; fail "train with a damaged _new CSV"; }
grep -q "warning: lightning-pose's evaluation after training stopped" train2.log || { cat train2.log; fail "no warning"; }
ls run2/tb_logs/*/version_0/checkpoints/*-best.ckpt >/dev/null || fail "no .ckpt after the damaged _new CSV"
echo "PASSED"
