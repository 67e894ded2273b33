# The pipeline image used by docker-compose.yml. CPU by default; see the GPU notes in the README.

# The letterbox's C kernel (src/preprocess/letterbox.c), built where a compiler is, so the image
# needs none; without it argus runs the same letterbox as TypeScript, slower.
FROM node:20-bookworm-slim AS native
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY scripts/build.mjs ./scripts/
COPY src/preprocess/letterbox.c ./src/preprocess/
RUN node scripts/build.mjs && test -f dist/native/letterbox.node

FROM node:20-bookworm-slim
WORKDIR /app
# A current, security-maintained ffmpeg from Debian: argus prefers it to the bundled 2018 build
# (README, "Which ffmpeg").
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# npm ci runs the package's prepare script (scripts/build.mjs): it needs the script itself.
COPY scripts/build.mjs ./scripts/
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY --from=native /app/dist/native ./dist/native
COPY bin ./bin
COPY src ./src
COPY models ./models
COPY pipelines ./pipelines
COPY streams ./streams
COPY tsconfig.json ./
ENV ARGUS_CACHE=/var/cache/argus ARGUS_STATE_DIR=/var/lib/argus
VOLUME ["/var/cache/argus", "/var/lib/argus"]
EXPOSE 8080
ENTRYPOINT ["node", "bin/argus.js"]
CMD ["run", "pipelines/demo-kafka.yaml"]
