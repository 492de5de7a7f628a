# One image for the API, the worker, migrations and the CLI.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
RUN node scripts/build-if-needed.mjs && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# DATA_DIR of docker-compose.yml: a named volume takes the ownership of the image's folder, so the node user
# can write documents there (a folder the image lacks would be created owned by root).
RUN mkdir -p /var/lib/wallet && chown node:node /var/lib/wallet
USER node
EXPOSE 3000
CMD ["node", "dist/src/main.js"]
