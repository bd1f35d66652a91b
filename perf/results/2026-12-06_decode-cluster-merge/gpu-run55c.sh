#!/bin/bash
# GPU run 55c (as run, one command line on the machine warm from 55b; recorded here): experiment C's block timelines
# (graph-timed figure in each file's header) of fixed-grid splits of 4, 8 and 16 pieces, main's path (c0) and the
# clusters (c1), two rounds. Only the 32k row's files came back (the rest were over the count of files returned);
# the console lines are in README.md. (The DECODE_DEV_SPLITS=8 variant of the 32k row did not run the split asked:
# decode_dev's timeline ignores that variable; its lines are not used.)
S=build/s55b; R=$OUT/r55c; mkdir -p $R; for r in 1 2; do for c in 0 1; do for sh in 1,32,8,1,32768,128:8 2,32,8,1,16384,128: 4,32,8,1,16384,128: 2,32,8,4,16384,128: 1,32,8,1,32768,128:; do shape=${sh%%:*}; sp=${sh##*:}; if [ -n "$sp" ]; then export DECODE_DEV_SPLITS=$sp; else unset DECODE_DEV_SPLITS; fi; FLASHCORE_DEV_CLUSTER=$c DECODE_DEV_SHAPE=$shape timeout 30 $S/decode_dev_c_tl timeline > $R/tl_${shape//,/_}_s${sp}_c${c}_r$r.txt 2>&1; echo "r$r c$c $shape s$sp: $(grep -o 'splits=[0-9]*.*graph-timed [0-9.]* us' $R/tl_${shape//,/_}_s${sp}_c${c}_r$r.txt | sed 's/.*splits=//') | $(grep -m1 'loop end' $R/tl_${shape//,/_}_s${sp}_c${c}_r$r.txt | cut -c1-80) | $(grep -m1 'merging' $R/tl_${shape//,/_}_s${sp}_c${c}_r$r.txt | grep -o 'last merge.*')"; done; done; done
