#!/bin/bash
export LR=1e-4
GPT_ARGS="
    --num-layers 24 \
    --lr ${LR} --min-lr -1e-5
"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS --save=${OUT:-/tmp} --no-shuffle --seed 42 2>&1 | tee log
