// `--import` for tap's test processes (package.json, "tap"."node-arg"): registers typescript-hooks.mjs.
import { register } from 'node:module';

register('./typescript-hooks.mjs', import.meta.url);
