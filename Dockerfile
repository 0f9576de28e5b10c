# syntax=docker/dockerfile:1
# Multi-stage build: compile TypeScript with dev dependencies, ship compiled JS with production ones only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY app ./app
COPY src ./src
COPY plugins ./plugins
COPY schemas ./schemas
COPY db ./db
RUN npm run build

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
# Non-root user; the embedded database, when DATABASE_URL is unset, lives in the /data volume.
RUN groupadd --system idp && useradd --system --gid idp --home-dir /app idp \
    && mkdir -p /data && chown idp:idp /data
USER idp
VOLUME ["/data"]
EXPOSE 3000
# Production needs at least SECRET_KEY and BASE_URL (the container refuses to start without them).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/app/cli.js"]
CMD ["serve"]
