#!/usr/bin/env node
// The node-maint agent removed from the cluster and its nodes: npm run agent:uninstall (see --help).
import { agentUninstallMain } from '../dist/cli/agent-uninstall.js';
import { scriptArgs } from './args.mjs';

process.exitCode = await agentUninstallMain(scriptArgs(import.meta.url));
