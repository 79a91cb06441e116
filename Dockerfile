# syntax=docker/dockerfile:1
# One image, three roles: `api`, `worker`, `operator` (first argument; `all` runs API + worker on
# the embedded stores). TypeScript is compiled in the build stage; the runtime runs plain `node`
# on the output with production dependencies only, as the unprivileged `node` user (uid 1000).

# An exact Node release (the one the suite runs on); a release build pins its digest too:
#   --build-arg NODE_IMAGE=node:20.20.2-bookworm-slim@sha256:<digest> (docs/deploy.md "Release artefacts").
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# Dependencies for the compiler, and native builds (better-sqlite3 compiles when no prebuilt binary fits).
FROM ${NODE_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# npm workspaces: npm ci needs every workspace's package.json to link them.
COPY package.json package-lock.json ./
COPY apps/server/package.json apps/server/
COPY apps/flag-evaluation/package.json apps/flag-evaluation/
COPY apps/sdk/package.json apps/sdk/
COPY apps/console/package.json apps/console/
COPY operator/package.json operator/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY apps ./apps
COPY operator ./operator
COPY bin ./bin
COPY scripts/build-layout.ts ./scripts/
# The service's and the operator's JavaScript laid out with their package.json (dist/), and the
# web console's static files (apps/console/dist).
RUN npm run build && npm run build:console

# Production dependencies only (same lock file, nothing resolved anew).
FROM ${NODE_IMAGE} AS prod-deps
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/server/package.json apps/server/
COPY apps/flag-evaluation/package.json apps/flag-evaluation/
COPY apps/sdk/package.json apps/sdk/
COPY apps/console/package.json apps/console/
COPY operator/package.json operator/
# Links node_modules/@tally-analytics/* to the workspaces' folders, which the runtime stage fills.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# The image's SBOM: its npm dependencies as installed (CycloneDX), at /app/sbom.cdx.json.
RUN npm sbom --sbom-format cyclonedx --omit dev > /app/sbom.cdx.json

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production DATA_DIR=/var/lib/tally PORT=8080
WORKDIR /app
COPY --from=prod-deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --from=prod-deps --chown=root:root /app/sbom.cdx.json ./sbom.cdx.json
# dist/ is the repo's layout compiled, each workspace with its package.json (scripts/build-layout.ts):
# the workspace links npm ci made resolve into it, through each package's exports.
COPY --from=build --chown=root:root /src/dist/apps ./apps
COPY --from=build --chown=root:root /src/dist/operator ./operator
COPY --from=build --chown=root:root /src/dist/bin ./bin
COPY --from=build --chown=root:root /src/apps/console/dist ./apps/console/dist
RUN mkdir -p /var/lib/tally && chown node:node /var/lib/tally
USER node
EXPOSE 8080
# One entry, the role as first argument: bin/tally.js starts the operator or the service.
ENTRYPOINT ["node", "--enable-source-maps", "bin/tally.js"]
CMD ["all"]
