//! {{name}}: an agmsg delivery plug. Every op it does not override falls back to agmsg's default (JSON
//! event hooks in the type's hooks_file): override `apply` and `status` to write a file of your own.

use agmsg_guest_sdk::agent::DeliveryPlug;

#[derive(Default)]
struct Plug;

agmsg_guest_sdk::export_agent_plug!(Plug);

impl DeliveryPlug for Plug {}
