import { buildServer } from "./proc.js"; console.log(await buildServer("count-driver.ts"));
