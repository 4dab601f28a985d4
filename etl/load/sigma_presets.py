"""Named field mappings for Sigma rules (`sigma.preset`): Sigma's (Sysmon's) field names -> event columns.

pySigma's own processing pipelines for these schemas are not installable next
to pySigma 2.0 (they pin pySigma < 2), so the mappings are small tables here:

* ``sysmon``: Sysmon events as Winlogbeat ships them: every event-data field
  under ``winlog.event_data.<Name>``; EventID, Channel, Provider_Name and
  Computer are winlog's own fields;
* ``ecs``: Elastic Common Schema (as Elastic's Windows integrations write
  process, file, network, registry and DNS events); fields ECS has no name for
  stay under ``winlog.event_data.<Name>``;
* ``ocsf``: the Open Cybersecurity Schema Framework's classes (Process Activity: ``process`` is the process
  started, ``actor.process`` its parent; File System, Module, Registry Key, Network and DNS Activity);
  fields OCSF has no attribute for stay under its ``unmapped.<Name>``.
"""

from __future__ import annotations

from collections.abc import Callable

_WINLOG = {
    "EventID": "winlog.event_id",
    "Channel": "winlog.channel",
    "Provider_Name": "winlog.provider_name",
    "Computer": "winlog.computer_name",
    "ComputerName": "winlog.computer_name",
}

_ECS = {
    **_WINLOG,
    "Image": "process.executable",
    "CommandLine": "process.command_line",
    "ProcessId": "process.pid",
    "ProcessGuid": "process.entity_id",
    "CurrentDirectory": "process.working_directory",
    "OriginalFileName": "process.pe.original_file_name",
    "Description": "process.pe.description",
    "Product": "process.pe.product",
    "Company": "process.pe.company",
    "FileVersion": "process.pe.file_version",
    "Hashes": "process.hash.sha256",
    "ParentImage": "process.parent.executable",
    "ParentCommandLine": "process.parent.command_line",
    "ParentProcessId": "process.parent.pid",
    "ParentProcessGuid": "process.parent.entity_id",
    "User": "user.name",
    "TargetFilename": "file.path",
    "ImageLoaded": "file.path",
    "TargetObject": "registry.path",
    "Details": "registry.data.strings",
    "SourceIp": "source.ip",
    "SourcePort": "source.port",
    "SourceHostname": "source.domain",
    "DestinationIp": "destination.ip",
    "DestinationPort": "destination.port",
    "DestinationHostname": "destination.domain",
    "Protocol": "network.transport",
    "QueryName": "dns.question.name",
    "QueryResults": "dns.answers",
}


def _winlog(table: dict[str, str]) -> Callable[[str], str]:
    return lambda f: table.get(f) or f"winlog.event_data.{f}"


_OCSF = {
    "EventID": "metadata.event_code",
    "Channel": "metadata.log_name",
    "Provider_Name": "metadata.log_provider",
    "Computer": "device.hostname",
    "ComputerName": "device.hostname",
    "Image": "process.file.path",
    "CommandLine": "process.cmd_line",
    "ProcessId": "process.pid",
    "ProcessGuid": "process.uid",
    "CurrentDirectory": "process.working_directory",
    "IntegrityLevel": "process.integrity",
    "Description": "process.file.desc",
    "Product": "process.file.product.name",
    "Company": "process.file.company_name",
    "FileVersion": "process.file.version",
    "ParentImage": "actor.process.file.path",
    "ParentCommandLine": "actor.process.cmd_line",
    "ParentProcessId": "actor.process.pid",
    "ParentProcessGuid": "actor.process.uid",
    "User": "actor.user.name",
    "TargetFilename": "file.path",
    "ImageLoaded": "module.file.path",
    "TargetObject": "reg_key.path",
    "SourceIp": "src_endpoint.ip",
    "SourcePort": "src_endpoint.port",
    "SourceHostname": "src_endpoint.hostname",
    "DestinationIp": "dst_endpoint.ip",
    "DestinationPort": "dst_endpoint.port",
    "DestinationHostname": "dst_endpoint.hostname",
    "Protocol": "connection_info.protocol_name",
    "QueryName": "query.hostname",
}


PRESETS: dict[str, Callable[[str], str]] = {
    "sysmon": _winlog(_WINLOG),
    "ecs": _winlog(_ECS),
    "ocsf": lambda f: _OCSF.get(f) or f"unmapped.{f}",
}
