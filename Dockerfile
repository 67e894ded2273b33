# The pipeline image used by docker-compose.yml. CPU by default; see the GPU notes in the README.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY models ./models
COPY pipelines ./pipelines
COPY streams ./streams
COPY tsconfig.json ./
ENV ARGUS_CACHE=/var/cache/argus
VOLUME ["/var/cache/argus"]
EXPOSE 8080
ENTRYPOINT ["node", "bin/argus.js"]
CMD ["run", "pipelines/demo-kafka.yaml"]
