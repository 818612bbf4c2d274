// A TypeDoc plugin: names each module of the reference after the import path users write
// (`@deadbolt/core/adapter`), not after the declaration file it was read from (`core/dist/adapter`).
import { Converter, ReflectionKind } from 'typedoc';

/** 'core/dist' -> '@deadbolt/core', 'fence/dist/postgres' -> '@deadbolt/fence/postgres'. */
export function importPathOf(moduleName) {
  const match = /^([\w-]+)\/dist(?:\/(.+?))?(?:\/index)?$/.exec(moduleName);
  if (!match) return moduleName;
  return match[2] ? `@deadbolt/${match[1]}/${match[2]}` : `@deadbolt/${match[1]}`;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      module.name = importPathOf(module.name);
    }
  });
}
