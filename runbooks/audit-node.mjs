#!/usr/bin/env zx
// Any node, any day: zx runbooks/audit-node.mjs NODE [--reclaim] [--output json] ... (see --help).
import { auditNodeMain } from '../dist/cli/audit-node.js';
import { scriptArgs } from './args.mjs';

process.exitCode = await auditNodeMain(scriptArgs(import.meta.url));
