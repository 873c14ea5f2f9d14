//! The wire types against recorded answer shapes, and the client against the strict fake.

use std::time::Duration;

use serde_json::Value;
use wright_telegram::testing::{FakeBotApi, FakeLimits};
use wright_telegram::wire::{
    AnswerCallbackQuery, ApiResponse, EditMessageText, GetUpdates, Incoming, InlineKeyboardButton,
    InlineKeyboardMarkup, Message, ParseMode, SendMessage, Update,
};
use wright_telegram::{BotApi, MESSAGE_LIMIT, TelegramError, format};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn recorded_answers_parse_into_the_wire_types() {
    let updates: ApiResponse<Vec<Update>> = serde_json::from_str(&fixture("get_updates_message.json")).unwrap();
    let update = &updates.result.unwrap()[0];
    let message = update.message.as_ref().unwrap();
    assert_eq!((message.chat.id, message.text.as_deref()), (184726109, Some("/codefailures 3")));
    let presses: ApiResponse<Vec<Update>> = serde_json::from_str(&fixture("get_updates_callback_query.json")).unwrap();
    let presses = presses.result.unwrap();
    assert_eq!(presses[0].callback_query.as_ref().unwrap().data.as_deref(), Some("p:17:1"));
    assert_eq!(presses[1].callback_query.as_ref().unwrap().message.as_ref().unwrap().date, 0, "inaccessible");
    assert!(presses[2].message.is_none() && presses[2].callback_query.is_none(), "an update kind Wright ignores");
    let sent: ApiResponse<Message> = serde_json::from_str(&fixture("send_message_ok.json")).unwrap();
    assert_eq!(sent.result.unwrap().message_id, 54);
    let limited: ApiResponse<Value> = serde_json::from_str(&fixture("error_429.json")).unwrap();
    assert_eq!((limited.ok, limited.parameters.unwrap().retry_after), (false, Some(7)));
}

const TOKEN: &str = "123456:test-token";

async fn fake() -> (FakeBotApi, BotApi) {
    let fake = FakeBotApi::start(TOKEN, FakeLimits::default()).await;
    let api = BotApi::new(fake.url(), TOKEN, Duration::from_secs(10)).unwrap();
    (fake, api)
}

fn html(chat_id: i64, text: &str) -> SendMessage {
    SendMessage {
        chat_id,
        text: text.to_owned(),
        parse_mode: Some(ParseMode::Html),
        reply_markup: None,
        link_preview_options: None,
    }
}

#[tokio::test]
async fn the_fake_answers_in_the_recorded_shapes_and_refuses_what_telegram_refuses() {
    let (fake, api) = fake().await;
    let person = fake.user(184726109, "Ada");
    // A bot cannot write first.
    let forbidden = api.send_message(&html(person.id, "hi")).await.unwrap_err();
    assert!(matches!(forbidden, TelegramError::Forbidden { .. }), "{forbidden:?}");
    let unknown = api.send_message(&html(5, "hi")).await.unwrap_err();
    assert!(
        matches!(&unknown, TelegramError::BadRequest { description } if description == "Bad Request: chat not found"),
        "{unknown:?}"
    );

    fake.send_text(&person, "/start");
    let updates =
        api.get_updates(&GetUpdates { offset: None, limit: None, timeout: 0, allowed_updates: None }).await.unwrap();
    assert_eq!(updates.len(), 1);
    let Incoming::Update(update) = &updates[0] else { panic!("{updates:?}") };
    assert_eq!(update.message.as_ref().unwrap().entities.as_ref().unwrap()[0].kind, "bot_command");
    // Confirming with a higher offset forgets them.
    let next = api
        .get_updates(&GetUpdates { offset: Some(update.update_id + 1), limit: None, timeout: 0, allowed_updates: None })
        .await
        .unwrap();
    assert!(next.is_empty());

    let sent = api.send_message(&html(person.id, "<b>Hello</b> &amp; welcome")).await.unwrap();
    assert_eq!(sent.text.as_deref(), Some("Hello & welcome"));
    let bad = api.send_message(&html(person.id, "2 < 3")).await.unwrap_err();
    assert!(
        matches!(&bad, TelegramError::BadRequest { description } if description.starts_with("Bad Request: can't parse entities")),
        "{bad:?}"
    );
    let long = api.send_message(&html(person.id, &"a".repeat(MESSAGE_LIMIT + 1))).await.unwrap_err();
    assert!(
        matches!(&long, TelegramError::BadRequest { description } if description == "Bad Request: message is too long"),
        "{long:?}"
    );
    let edit = EditMessageText {
        chat_id: person.id,
        message_id: sent.message_id,
        text: "<b>Hello</b> &amp; welcome".to_owned(),
        parse_mode: Some(ParseMode::Html),
        reply_markup: None,
        link_preview_options: None,
    };
    let same = api.edit_message_text(&edit).await.unwrap_err();
    assert!(same.is_not_modified(), "{same:?}");
    let wrong_token = BotApi::new(fake.url(), "1:nope", Duration::from_secs(5)).unwrap();
    assert!(matches!(wrong_token.get_me().await.unwrap_err(), TelegramError::Unauthorized));
    assert!(!format!("{:?}", wrong_token).contains("nope"), "the token stays out of Debug");
}

#[tokio::test]
async fn buttons_and_callback_answers_and_flood_control() {
    let (fake, api) = fake().await;
    let person = fake.user(42, "Ada");
    fake.send_text(&person, "hello");
    let keyboard = InlineKeyboardMarkup {
        inline_keyboard: vec![vec![InlineKeyboardButton {
            text: "Oslo".to_owned(),
            callback_data: Some("p:1:0".to_owned()),
            url: None,
        }]],
    };
    let too_long = InlineKeyboardMarkup {
        inline_keyboard: vec![vec![InlineKeyboardButton {
            text: "x".to_owned(),
            callback_data: Some("d".repeat(65)),
            url: None,
        }]],
    };
    let mut request = html(person.id, "Which city?");
    request.reply_markup = Some(too_long);
    assert!(api.send_message(&request).await.is_err(), "callback_data over 64 bytes");
    request.reply_markup = Some(keyboard);
    let question = api.send_message(&request).await.unwrap();
    let query = fake.press(&person, question.message_id, "p:1:0");
    let answer =
        AnswerCallbackQuery { callback_query_id: query.clone(), text: Some("Oslo".to_owned()), show_alert: None };
    assert!(api.answer_callback_query(&answer).await.unwrap());
    assert!(api.answer_callback_query(&answer).await.is_err(), "a query is answered once");

    fake.force_retry_after(person.id, 1);
    match api.send_message(&html(person.id, "now")).await.unwrap_err() {
        TelegramError::RateLimited { retry_after } => assert_eq!(retry_after, Duration::from_secs(1)),
        other => panic!("{other:?}"),
    }
    // Asking again at once is a violation the fake counts.
    assert!(api.send_message(&html(person.id, "again")).await.is_err());
    assert_eq!(fake.snapshot().violations, 1);
}

#[test]
fn every_rendered_message_fits_the_fakes_checks() {
    let text = format!("**Report**\n{}\n```\n{}\n```", "Line & <b> stays text. ".repeat(600), "code ".repeat(1500));
    for message in format::render(&text, MESSAGE_LIMIT) {
        let parsed = wright_telegram::entities::parse_html(&message).unwrap();
        assert!(parsed.utf16_len() <= MESSAGE_LIMIT);
    }
}

/// Issue 33 item 4: an update Wright's types do not know (a chat type a newer Bot API sends)
/// is returned on its own as undecodable, with its id; the updates around it still decode.
#[tokio::test]
async fn an_update_that_does_not_decode_is_returned_alone_with_its_id() {
    let (fake, api) = fake().await;
    let person = fake.user(42, "Ada");
    fake.send_text(&person, "before");
    let odd = fake.push_raw_update(|update_id| {
        serde_json::json!({"update_id": update_id, "message": {"message_id": 9, "date": 1,
            "chat": {"id": -100, "type": "business_lounge"}, "text": "hi"}})
    });
    fake.send_text(&person, "after");
    let updates =
        api.get_updates(&GetUpdates { offset: None, limit: None, timeout: 0, allowed_updates: None }).await.unwrap();
    assert_eq!(updates.len(), 3, "{updates:?}");
    assert!(matches!(&updates[1], Incoming::Undecodable { update_id: Some(id), .. } if *id == odd), "{updates:?}");
    let texts: Vec<&str> = updates
        .iter()
        .filter_map(|incoming| match incoming {
            Incoming::Update(update) => update.message.as_ref()?.text.as_deref(),
            Incoming::Undecodable { .. } => None,
        })
        .collect();
    assert_eq!(texts, ["before", "after"]);
}
