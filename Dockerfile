# The engine's image. It runs the API by default; the worker and the migrations run from the same
# image with another command (see docker-compose.yml). Node 24, as package.json requires.
FROM node:24-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. The devDependencies are
# needed at run time too: the entry points run the TypeScript sources through tsx.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .
# The dashboard served at /dashboard: type-checked and built into dashboard/dist.
RUN node_modules/.bin/tsc --noEmit -p dashboard/tsconfig.json && node_modules/.bin/vite build dashboard

ENV NODE_ENV=production
USER node
EXPOSE 3000
CMD ["npm", "run", "api"]
