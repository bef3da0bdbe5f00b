import assert from "node:assert/strict";
import { ConfigError, loadAgentConfig } from "./mod.ts";

Deno.test("[access] defaults to /etc/ssh, its sshd_config, and a SIGHUP to /run/sshd.pid", () => {
  const a = loadAgentConfig("").access;
  assert.deepEqual(a, {
    sshDir: "/etc/ssh",
    sshdConfig: "/etc/ssh/sshd_config",
    sshd: "sshd",
    sshKeygen: "ssh-keygen",
    sshdPidFile: "/run/sshd.pid",
    reloadCommand: undefined,
  });
  const b = loadAgentConfig('[access]\nssh_dir = "/tmp/x"\nreload_command = ["/usr/bin/systemctl", "reload", "ssh"]\n');
  assert.equal(b.access.sshdConfig, "/tmp/x/sshd_config");
  assert.deepEqual(b.access.reloadCommand, ["/usr/bin/systemctl", "reload", "ssh"]);
});

Deno.test("[access] refuses a relative ssh_dir, an unknown key and an empty reload_command, by name", () => {
  for (
    const [toml, key] of [
      ['[access]\nssh_dir = "etc/ssh"\n', "access.ssh_dir"],
      ["[access]\nsshd_path = 1\n", "access.sshd_path"],
      ["[access]\nreload_command = []\n", "access.reload_command"],
    ] as const
  ) {
    assert.throws(() => loadAgentConfig(toml), (e: unknown) => e instanceof ConfigError && e.key === key);
  }
});
