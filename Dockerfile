# One image, three roles: `api`, `worker`, `operator` (first argument).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm install --no-save tsx
COPY apps ./apps
COPY tsconfig.json ./
ENV NODE_ENV=production DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["npx", "tsx", "apps/server/src/main.ts"]
CMD ["all"]
