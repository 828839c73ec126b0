# The sandbox-injector image: the webhook (`serve`) and the CLI, on a Node 26 runtime with no shell.
#
#   docker build --build-arg VERSION=0.1.0 -t ghcr.io/example/sandbox-injector:0.1.0 .
#
# ghcr.io/example/... is a placeholder (docs/install.md): push to your registry and point the manifests at it.

# Build: all dependencies, TypeScript compiled to dist/.
FROM node:26-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
# npm ci runs the package's prepare script, `npm run build`, so the sources must be there first.
RUN npm ci --no-audit --no-fund

# Production dependencies only, installed apart so no build tool reaches the image.
FROM node:26-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# Runtime: distroless Node 26 on Debian 13 (no shell, no package manager), as its numeric non-root user.
FROM gcr.io/distroless/nodejs26-debian13:nonroot
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="sandbox-injector" \
      org.opencontainers.image.description="Mutating admission webhook that injects OpenKruise Agents sandbox runtimes into pods" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /app
# The image puts node at /nodejs/bin/node, off PATH. The optional wrapper init container runs
# `node /app/dist/cli/main.js install-wrapper ...`, and Kubernetes resolves `node` through the image's PATH.
ENV NODE_ENV=production \
    PATH=/nodejs/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# package.json is needed at run time: its "type": "module" makes dist/*.js ES modules.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Copied into pods by `install-wrapper`; the CLI finds it at this path, relative to dist/.
COPY src/wrapper/run_with_envs.sh ./src/wrapper/run_with_envs.sh
# The default --config-file of `serve` without a cluster; offline `inject`/`review` read it when given it.
COPY manifests/components/injection-config/injection-config.yaml ./manifests/components/injection-config/injection-config.yaml
USER 65532:65532
EXPOSE 8443 9090
# Probes are the kubelet's job (/healthz, /readyz in manifests/base/deployment.yaml): no HEALTHCHECK.
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
CMD ["serve"]
