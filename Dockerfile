# The pipeline image used by docker-compose.yml. CPU by default; see the GPU notes in the README.
FROM node:20-bookworm-slim
WORKDIR /app
# A current, security-maintained ffmpeg from Debian: argus prefers it to the bundled 2018 build
# (README, "Which ffmpeg").
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
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
