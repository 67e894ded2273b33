# The pipeline image used by docker-compose.yml. CPU by default; see the GPU notes in the README.

# What `npm ci` builds on a developer's machine, built here where a C compiler and the dev
# dependencies are, so the image needs neither: the letterbox's C kernel
# (src/preprocess/letterbox.c → dist/native; without it the letterbox runs as TypeScript, slower),
# the frame channel's reader (src/sources/frame-channel.c → dist/native; without it Node reads
# ffmpeg's frames in many small reads, more CPU a frame) and the compiled CLI (src → dist/src, by tsc, a dev dependency). Without dist/src the image's
# `npm ci --omit=dev` had no tsc, and bin/argus.js ran every command through tsx's loader
# (`argus detect` of one image: 186–191 MB peak RSS and 1.1–1.2 s, against 154 MB and 0.65 s
# compiled; on a live 1080p30 run tsx's heap churn cost a full GC every ~6 frames, README).
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# Only the packages and their types are needed here: no install script (onnxruntime-node's would
# fetch GPU binaries).
RUN npm ci --ignore-scripts
COPY scripts/build.mjs ./scripts/
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# bin/argus.js runs dist/src only while no file in src/ is newer than dist/.built: a file of the
# build context dated after the build (its clock ahead of the builder's) is given the stamp's
# time, as it is what was compiled.
RUN node scripts/build.mjs && test -f dist/native/letterbox.node && test -f dist/native/frame-channel.node && test -f dist/native/hard-exit.node && test -f dist/src/cli.js && test -f dist/.built \
 && find src -type f -newer dist/.built -exec touch -r dist/.built {} + \
 && test -z "$(find src -type f -newer dist/.built)"

FROM node:20-bookworm-slim
WORKDIR /app
# A current, security-maintained ffmpeg from Debian: argus prefers it to the bundled 2018 build
# (README, "Which ffmpeg").
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# No install script runs here, none being needed. The package's own prepare script
# (scripts/build.mjs) would build dist/ without a compiler or tsc (dev dependencies omitted) and
# say "the letterbox runs as TypeScript" and "bin/argus.js runs the TypeScript sources through
# tsx", untrue: dist/ is the build stage's, copied below. The dependencies' scripts: the
# platform's binaries are in their packages (onnxruntime-node's CPU provider, sharp's
# @img/sharp-linux-*, esbuild's @esbuild/linux-* for tsx, the bundled ffmpeg with its mode), and
# onnxruntime-node's would download the CUDA 12 provider from NuGet into the CPU image (Node 20's
# npm 10.8 does not read package.json's allowScripts). (README, "Inference on GPU hosts": a GPU
# image runs `npm rebuild onnxruntime-node --onnxruntime-node-install=cuda12`.)
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY bin ./bin
# src and dist from one stage, after npm ci (a layer that changes with package-lock.json alone
# stays cached when only the code changes). src taken from the build
# context instead kept the context's mtimes while a cached build stage gave an older stamp (COPY
# keeps mtimes; its cache compares contents only): after a fresh clone or a checkout, with only
# bin/ or this stage changed, the image's src was newer than its dist, and the check below failed
# the build (without it, bin/argus.js would have run tsx).
COPY --from=build /app/src ./src
COPY --from=build /app/dist ./dist
# The stamp must be there: find of a missing stamp prints nothing, and passed.
RUN test -f dist/.built && test -z "$(find src -type f -newer dist/.built)"
COPY models ./models
COPY pipelines ./pipelines
COPY streams ./streams
COPY tsconfig.json ./
ENV ARGUS_CACHE=/var/cache/argus ARGUS_STATE_DIR=/var/lib/argus
# argus runs as the base image's non-root user `node` (uid 1000), not as root: a flaw in ffmpeg,
# a decoder or a parser of what a camera or client sends then holds that user's rights, not the
# container's root. It writes only in the two folders below (the cache of fetched and derived
# assets, and the state: the alert outbox and the Kafka dead-letter file), which are made its own
# here, before VOLUME: an empty named volume mounted there starts with their owner and mode (a
# change after VOLUME would be discarded). /app stays root's: argus only reads it.
RUN mkdir -p /var/cache/argus /var/lib/argus && chown node:node /var/cache/argus /var/lib/argus
VOLUME ["/var/cache/argus", "/var/lib/argus"]
USER node
EXPOSE 8080
ENTRYPOINT ["node", "bin/argus.js"]
CMD ["run", "pipelines/demo-kafka.yaml"]
