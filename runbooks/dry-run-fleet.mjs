#!/usr/bin/env zx
// CI dry runs where nodes are containers (kind): zx runbooks/dry-run-fleet.mjs NODE[=CONTAINER]... --to ... (--help).
import { dryRunFleetMain } from '../dist/cli/dry-run-fleet.js';
import { scriptArgs } from './args.mjs';

process.exitCode = await dryRunFleetMain(scriptArgs(import.meta.url));
